package cmd

import (
	"errors"

	"github.com/alecthomas/kong"
)

// helpCmd is lite help [COMMAND...]: the help lite COMMAND --help prints.
type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command, as in: lite help enqueue, lite help schedule add."`
}

// Run parses the command again with --help, whose hook prints its help
// and ends the run with exit 0; a command lite does not have is a usage
// error.
func (c *helpCmd) Run(kctx *kong.Context) error {
	_, err := kctx.Kong.Parse(append(c.Command, "--help"))
	if err == nil {
		return errors.New("help: no help was printed")
	}
	return usageError{noCommandHint(err)}
}
