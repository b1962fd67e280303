package lite_test

import (
	"testing"

	"github.com/matryer/is"
)

func TestRebind(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.mustOpen(t, newFakeClock())
		postgres := q.Engine() == "postgres"

		t.Run("the engine is named", func(t *testing.T) {
			is.New(t).Equal(q.Engine(), e.name)
		})

		t.Run("placeholders become the engine's, and quoted text stays", func(t *testing.T) {
			is := is.New(t)
			for query, onPostgres := range map[string]string{
				`select ? , ?`:                                        `select $1 , $2`,
				`where a = ?2 and b = ? and c = ?1`:                   `where a = $2 and b = $3 and c = $1`, // a bare ? follows the largest before it, as SQLite numbers it
				`select '?', "a?b", ? -- why?` + "\n" + `, ? /* ? */`: `select '?', "a?b", $1 -- why?` + "\n" + `, $2 /* ? */`,
				`select 'it''s ?', ?`:                                 `select 'it''s ?', $1`,
				`select $1`:                                           `select $1`,
				`select 'open ?`:                                      `select 'open ?`,
				`select E'it\'s ?', ?`:                                `select E'it\'s ?', $1`, // PostgreSQL's escaped literal: \' is no end
				`select e'\\', ?, E'a''b\'?'`:                         `select e'\\', $1, E'a''b\'?'`,
				`select $$ a ? b $$, ?`:                               `select $$ a ? b $$, $1`, // dollar-quoted bodies
				`select $tag$ ? $ $tag$, ?`:                           `select $tag$ ? $ $tag$, $1`,
				`select $1, ?2`:                                       `select $1, $2`,
				`select a$b$c, ?, some'x?'`:                           `select a$b$c, $1, some'x?'`, // $ inside a name opens nothing; a name's last e is no E''
			} {
				want := query
				if postgres {
					want = onPostgres
				}
				is.Equal(q.Rebind(query), want)
			}
		})

		t.Run("a program's own table, made by the recipe, takes rebound SQL", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			id := "integer primary key"
			if postgres {
				id = "bigint generated always as identity primary key"
			}
			_, err := q.DB().ExecContext(ctx, `create table notes (id `+id+`, body text not null, size bigint not null)`)
			is.NoErr(err)
			var first int64
			is.NoErr(q.DB().QueryRowContext(ctx, q.Rebind(`insert into notes (body, size) values (?, ?) returning id`), "hi", int64(1)<<40).Scan(&first))
			is.Equal(first, int64(1))
			var size int64
			is.NoErr(q.DB().QueryRowContext(ctx, q.Rebind(`select size from notes where id = ? and body = ?`), first, "hi").Scan(&size))
			is.Equal(size, int64(1)<<40) // bigint is 64 bits on both
		})
	})
}
