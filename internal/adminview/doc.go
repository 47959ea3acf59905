// Package adminview renders store rows as the admin REST API answers them,
// in the types of package admin/client. The API's handlers, the dashboard
// and the binary's admin commands in direct mode (on the database, no
// server) all build their views here, from the same reads, so they show
// the same facts.
//
// It sits below the scheduler: it reads a store.Store and knows a job only
// as a Declared, never the root package.
package adminview
