package cmd

import "io"

// SchemaCmd prints the schema a fresh lite database has.
type SchemaCmd struct{}

// Run writes schema.sql.
func (c *SchemaCmd) Run(env Env) error {
	_, err := io.WriteString(env.Stdout, env.Schema)
	return err
}
