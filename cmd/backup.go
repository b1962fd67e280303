package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/liteq/lite/lite"
)

// backupCmd writes a consistent copy of the queue's file while workers
// run on it.
type backupCmd struct {
	Dest  string `arg:"" name:"dest" type:"path" help:"The file to write the copy to (mode 0600)."`
	Force bool   `help:"Replace a file already at DEST."`
}

// Run backs up and prints where to and how big (--json: {"dest": path,
// "bytes": size}).
func (c *backupCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := q.Backup(ctx, c.Dest, lite.BackupOptions{Force: c.Force}); errors.Is(err, fs.ErrExist) {
		// The library's words name its option; a CLI user has a flag.
		return fmt.Errorf("backup to %s: file already exists: give --force to replace it", c.Dest)
	} else if err != nil {
		return err
	}
	info, err := os.Stat(c.Dest)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Dest  string `json:"dest"`
			Bytes int64  `json:"bytes"`
		}{c.Dest, info.Size()})
	}
	_, err = fmt.Fprintf(env.Stdout, "backed up %s to %s (%s)\n", safe(g.DB), safe(c.Dest), size(info.Size()))
	return err
}
