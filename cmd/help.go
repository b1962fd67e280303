package cmd

import (
	"errors"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// helpCmd is lite help [COMMAND...]: the help lite COMMAND --help prints.
type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command, as in: lite help enqueue, lite help schedule add."`
}

// Run parses the command again with --help, whose hook prints its help
// and ends the run with exit 0. Every word must name a command: parsed,
// a word past the command would pass for its argument (lite help enqueue
// extra, a payload) and print the help of a call lite was not asked
// about.
func (c *helpCmd) Run(kctx *kong.Context) error {
	node := kctx.Model.Node
	for i, word := range c.Command {
		if node = subcommand(node, word); node == nil {
			return usagef("help: lite has no command %s (lite help lists the commands)", safe(strings.Join(c.Command[:i+1], " ")))
		}
	}
	_, err := kctx.Kong.Parse(append(c.Command, "--help"))
	if err == nil {
		return errors.New("help: no help was printed")
	}
	return usageError{noCommandHint(err)}
}

// subcommand is node's command called word, or nil.
func subcommand(node *kong.Node, word string) *kong.Node {
	for _, child := range node.Children {
		if child.Type == kong.CommandNode && (child.Name == word || slices.Contains(child.Aliases, word)) {
			return child
		}
	}
	return nil
}
