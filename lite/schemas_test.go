package lite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/liteq/lite/lite"
)

// Migrating a fresh schema is most of what a PostgreSQL test costs (a
// hundred milliseconds of DDL, and as much again to drop it), so a
// schema is recycled for the next test once its own test ends: lite's
// tables emptied and their ids starting over, whatever else the test made
// dropped. Only a schema whose lite objects are exactly a fresh one's is
// recycled; any other is dropped, so a test that changed lite's tables
// never leaks into the next.
var schemaPool struct {
	sync.Mutex
	free      []string
	reference string // the fingerprint of a freshly migrated schema
	made      []string
}

// takeSchema returns an empty schema: a recycled one, or a new one that
// lite migrates when the test opens it.
func takeSchema(ctx context.Context) (string, error) {
	schemaPool.Lock()
	defer schemaPool.Unlock()
	if schemaPool.reference == "" {
		ref, err := newSchema(ctx)
		if err != nil {
			return "", err
		}
		if schemaPool.reference, err = migratedFingerprint(ctx, ref); err != nil {
			return "", err
		}
		schemaPool.free = append(schemaPool.free, ref)
	}
	if n := len(schemaPool.free); n > 0 {
		name := schemaPool.free[n-1]
		schemaPool.free = schemaPool.free[:n-1]
		return name, nil
	}
	return newSchema(ctx)
}

func newSchema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("lite_test_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := adminDB.ExecContext(ctx, "create schema "+name); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	schemaPool.made = append(schemaPool.made, name)
	return name, nil
}

// migratedFingerprint lets lite migrate the schema and fingerprints it.
func migratedFingerprint(ctx context.Context, name string) (string, error) {
	q, err := lite.Open(ctx, schemaURL(name), lite.Options{})
	if err != nil {
		return "", err
	}
	q.Close()
	tx, err := adminDB.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	return fingerprint(ctx, tx, name)
}

// giveSchema recycles a test's schema, or drops it.
func giveSchema(name string) {
	ctx := context.Background()
	if err := recycle(ctx, name); err != nil {
		adminDB.ExecContext(ctx, "drop schema "+name+" cascade")
		return
	}
	schemaPool.Lock()
	defer schemaPool.Unlock()
	schemaPool.free = append(schemaPool.free, name)
}

// liteTables are the tables lite's migrations make.
const liteTables = `'lite_jobs', 'lite_workers', 'lite_migrations'`

func recycle(ctx context.Context, name string) error {
	tx, err := adminDB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// A connection the test left open must not make the next test wait.
	if _, err := tx.ExecContext(ctx, "set local lock_timeout = '2s'"); err != nil {
		return err
	}
	var drops []string
	rows, err := tx.QueryContext(ctx, `select format('drop %s if exists %I.%I cascade',
    case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end,
    n.nspname, c.relname)
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'f')
  and c.relname not in (`+liteTables+`)
union all
select format('drop function if exists %I.%I cascade', n.nspname, p.proname)
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = $1 and p.proname <> 'lite_jobs_notify'`, name)
	if err != nil {
		return err
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		drops = append(drops, s)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, s := range drops {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	got, err := fingerprint(ctx, tx, name)
	if err != nil {
		return err
	}
	if got != schemaPool.reference {
		return fmt.Errorf("schema %s differs from a fresh one", name)
	}
	for _, s := range []string{
		"delete from " + name + ".lite_jobs",
		"delete from " + name + ".lite_workers",
		"alter table " + name + ".lite_jobs alter column id restart",
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// fingerprint describes every object in the schema: relations, columns,
// defaults, constraints, indexes, triggers and functions.
func fingerprint(ctx context.Context, tx *sql.Tx, name string) (string, error) {
	// Inside the schema, definitions name its objects without it.
	if _, err := tx.ExecContext(ctx, "set local search_path = "+name); err != nil {
		return "", err
	}
	var fp sql.NullString
	err := tx.QueryRowContext(ctx, `select string_agg(x, E'\n' order by x) from (
    select 'relation ' || c.relname || ' ' || c.relkind::text
    from pg_class c where c.relnamespace = $1::regnamespace
    union all
    select 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
        || ' ' || a.attnotnull::text || ' ' || a.attidentity::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    from pg_attribute a join pg_class c on c.oid = a.attrelid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = $1::regnamespace and a.attnum > 0 and not a.attisdropped
    union all
    select 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
    from pg_constraint where connamespace = $1::regnamespace
    union all
    select 'index ' || pg_get_indexdef(i.indexrelid)
    from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = $1::regnamespace
    union all
    select 'trigger ' || pg_get_triggerdef(t.oid)
    from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = $1::regnamespace and not t.tgisinternal
    union all
    select 'function ' || p.proname || ' ' || md5(p.prosrc)
    from pg_proc p where p.pronamespace = $1::regnamespace
) objects (x)`, name).Scan(&fp)
	return fp.String, err
}

// dropSchemas drops every schema this process made, at its end.
func dropSchemas() {
	schemaPool.Lock()
	defer schemaPool.Unlock()
	if len(schemaPool.made) > 0 {
		adminDB.Exec("drop schema if exists " + strings.Join(schemaPool.made, ", ") + " cascade")
	}
}
