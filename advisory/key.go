package advisory

import (
	"crypto/sha256"
	"encoding/binary"
)

// keyPrefix separates cronfence's keys from those of a program hashing the
// same bare names. It is part of the key derivation: never change it, or two
// versions of an application would not exclude each other.
const keyPrefix = "cronfence/advisory:"

// Key derives the 64-bit advisory lock key of name: the first 8 bytes of
// SHA-256(keyPrefix + name), big-endian, as a signed int64. Distinct names get
// distinct keys unless SHA-256 collides in those 64 bits (a chance of about
// 2^-64 per pair). Unlike PostgreSQL's hashtext, the result is stable across
// server versions and computable outside the database.
func Key(name string) int64 {
	sum := sha256.Sum256([]byte(keyPrefix + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}
