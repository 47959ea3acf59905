package adminview_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// An alert's details are never null; its ack is null until acknowledged,
// and "acknowledged" holds only while it is open.
func TestAlertOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := adminview.AlertOf(store.Alert{ID: 1, Kind: store.AlertFailing, Subject: "nightly", RaisedAt: at})
	if v.Details == nil || v.Ack != nil || !v.Open || v.Acknowledged || v.ResolvedAt != nil {
		t.Fatalf("open, no ack: %+v", v)
	}
	acked := store.Alert{ID: 1, Kind: store.AlertFailing, Subject: "nightly", RaisedAt: at, Ack: store.AlertAck{By: "ops", At: at, Note: "on it"}}
	if v := adminview.AlertOf(acked); v.Ack == nil || v.Ack.By != "ops" || *v.Ack.At != "2026-01-02T03:04:05Z" || !v.Acknowledged {
		t.Fatalf("acknowledged: %+v", v)
	}
	acked.ResolvedAt = at.Add(time.Minute)
	if v := adminview.AlertOf(acked); v.Ack == nil || v.Acknowledged || v.Open {
		t.Fatalf("resolved keeps its ack, no longer acknowledged: %+v", v)
	}
}
