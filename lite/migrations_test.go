package lite

import (
	"testing"

	"github.com/matryer/is"
)

// A schema version means the same on both engines: lite refuses a newer
// one and reports one by number, whichever engine holds it.
func TestMigrationsMatchAcrossEngines(t *testing.T) {
	is := is.New(t)
	sqliteMs, err := loadMigrations(engineSQLite)
	is.NoErr(err)
	postgresMs, err := loadMigrations(enginePostgres)
	is.NoErr(err)
	is.Equal(len(postgresMs), len(sqliteMs)) // one migration per version in each dialect
	for i := range sqliteMs {
		is.Equal(postgresMs[i].version, sqliteMs[i].version)
		is.Equal(postgresMs[i].name, sqliteMs[i].name)
	}
}
