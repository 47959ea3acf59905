package client

// Alert is one alert, as GET /api/admin/cron/alerts lists it and the ack
// endpoint answers it.
type Alert struct {
	// ID is the alert's id; a later alert of the same kind and subject
	// has another.
	ID int64 `json:"id"`
	// Kind is what was noticed ("deadline_missed", "clock_offset", …).
	Kind string `json:"kind"`
	// Subject is what it is about: a job's name, a replica's owner.
	Subject string `json:"subject"`
	// Message says it in a sentence.
	Message string `json:"message"`
	// Details are the facts behind it, never null.
	Details map[string]string `json:"details"`
	// RaisedBy is the replica that raised it.
	RaisedBy string `json:"raisedBy"`
	// RaisedAt is when it was raised.
	RaisedAt *string `json:"raisedAt"`
	// LastSeenAt is when a check last found it still true.
	LastSeenAt *string `json:"lastSeenAt"`
	// ResolvedAt is when it was resolved, null while it is open.
	ResolvedAt *string `json:"resolvedAt"`
	// Open says it is not resolved.
	Open bool `json:"open"`
	// Acknowledged says it is open and acknowledged: until it changes,
	// `cronfence check` does not count it and the webhook does not send it
	// again.
	Acknowledged bool `json:"acknowledged"`
	// Ack is the operator's acknowledgement, null when none (a resolved
	// alert keeps the one it had).
	Ack *AlertAck `json:"ack"`
}

// AlertAck is an operator's acknowledgement of an alert.
type AlertAck struct {
	// By is who acknowledged it: the admin token's name, or the CLI's --by.
	By string `json:"by"`
	// At is when, by the database clock.
	At *string `json:"at"`
	// Note is why.
	Note string `json:"note"`
}
