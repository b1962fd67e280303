package cmd

import (
	"io"

	"github.com/liteq/lite/lite"
)

// SchemaCmd prints the schema a fresh lite database has.
type SchemaCmd struct{}

// Run writes schema.sql, SQLite's schema; a PostgreSQL database's is not
// in the binary.
func (c *SchemaCmd) Run(env Env, g *Globals) error {
	if lite.IsServerURL(g.DB) {
		return usagef("schema prints a SQLite file's schema; lite/migrations/postgres makes PostgreSQL's (pg_dump --schema-only prints a database's)")
	}
	_, err := io.WriteString(env.Stdout, env.Schema)
	return err
}
