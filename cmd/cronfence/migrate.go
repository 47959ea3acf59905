package main

import "fmt"

// migrateCmd is `cronfence migrate`.
type migrateCmd struct{}

func (migrateCmd) Run(a *app) error {
	db, err := a.globals.openMigrated(a.ctx)
	if err != nil {
		return err
	}
	defer db.close()
	version, _, err := db.SchemaVersion(a.ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version of %s: %w", db.where, err)
	}
	fmt.Fprintf(a.stdout, "%s: schema version %d\n", db.where, version)
	return nil
}
