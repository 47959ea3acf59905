// Package pgtest gives tests a real PostgreSQL: the shared test database
// (URL, Schema, NewPool) and private throwaway clusters for tests that stop,
// restart or kill the server (NewCluster).
//
// Tests never mock the database. The shared database comes from
// TEST_DATABASE_URL or, when unset, postgres://postgres@127.0.0.1:5432/test.
// When nothing answers there and PostgreSQL's server binaries are installed,
// one throwaway cluster is started for the whole test binary instead, so a
// developer without a running server still gets a real database; without
// binaries the test fails with a message naming what to install. With
// go test -short a missing database skips the test instead.
//
// Each test gets its own schema (Schema), dropped when the test ends, and a
// pool whose search_path is empty, so a query that forgets to qualify a
// table with its schema fails instead of silently reading another test's
// data.
//
// A package that uses this helper calls Main from TestMain, which removes the
// throwaway cluster, if one was started, after the tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest
