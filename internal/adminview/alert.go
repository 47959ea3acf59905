package adminview

import (
	"context"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// AlertOf is the API view of an alert row.
func AlertOf(a store.Alert) client.Alert {
	v := client.Alert{
		ID: a.ID, Kind: string(a.Kind), Subject: a.Subject, Message: a.Message, Details: a.Details,
		RaisedBy: a.RaisedBy, RaisedAt: Time(a.RaisedAt), LastSeenAt: Time(a.LastSeenAt),
		ResolvedAt: Time(a.ResolvedAt), Open: a.Open(), Acknowledged: a.Acknowledged(),
	}
	if !a.Ack.IsZero() {
		v.Ack = &client.AlertAck{By: a.Ack.By, At: Time(a.Ack.At), Note: a.Ack.Note}
	}
	if v.Details == nil {
		v.Details = map[string]string{}
	}
	return v
}

// Alerts lists alerts from st, newest first.
func Alerts(ctx context.Context, st store.Store, p store.AlertListParams) ([]client.Alert, error) {
	rows, err := st.AlertList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]client.Alert, 0, len(rows))
	for _, a := range rows {
		out = append(out, AlertOf(a))
	}
	return out, nil
}
