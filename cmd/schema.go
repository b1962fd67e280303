package cmd

import (
	"io"

	"github.com/liteq/lite/lite"
)

// schemaCmd prints the schema a fresh lite database has.
type schemaCmd struct{}

// Run writes schema.sql, SQLite's schema; a PostgreSQL database's is not
// in the binary.
func (c *schemaCmd) Run(env Env, g *globals) error {
	if lite.IsServerURL(g.DB) {
		return usagef("schema prints a SQLite file's schema; lite/migrations/postgres makes PostgreSQL's (pg_dump --schema-only prints a database's)")
	}
	_, err := io.WriteString(env.Stdout, env.Schema)
	return err
}
