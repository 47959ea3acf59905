package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/admin/internal/adminapi"
)

func TestActionKeyExpiresAndNamesItsToken(t *testing.T) {
	t.Parallel()
	tokens := []adminapi.Token{{Name: "ops", Role: adminapi.RoleAdmin, Secret: "s3cret-admin-0123456789"},
		{Name: "viewer", Role: adminapi.RoleRead, Secret: "s3cret-read-0123456789"}}
	d := New(nil, tokens, nil).(*dashboard)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ops := adminapi.Identity{Name: "ops", Role: adminapi.RoleAdmin}
	key := d.actionKey(ops, now)
	if id, err := d.checkActionKey(key, now.Add(actionKeyFor-time.Second)); err != nil || id != ops {
		t.Fatalf("a fresh key: %v, %v; want ops", id, err)
	}
	if _, err := d.checkActionKey(key, now.Add(actionKeyFor+time.Second)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired key: %v, want expired", err)
	}
	if d.actionKey(adminapi.Identity{Name: "viewer", Role: adminapi.RoleRead}, now) != "" {
		t.Fatal("a read token got an action key")
	}
	// The same tokens on another replica verify it; a changed secret does not.
	other := New(nil, tokens, nil).(*dashboard)
	if _, err := other.checkActionKey(key, now); err != nil {
		t.Fatalf("another replica with the same tokens: %v", err)
	}
	tokens[0].Secret = "rotated-secret-0123456789"
	rotated := New(nil, tokens, nil).(*dashboard)
	if _, err := rotated.checkActionKey(key, now); err == nil {
		t.Fatal("a key signed before the token was rotated still works")
	}
}
