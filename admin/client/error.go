package client

import "encoding/json"

// Error is an error answer of the API: its {"code", "message",
// "details"} and the HTTP status. An answer that is not the API's JSON
// (a proxy's page, say) has the status as its code and the body as its
// message.
type Error struct {
	// Status is the HTTP status.
	Status int `json:"-"`
	// Code names the error ("CRON_JOB_NOT_FOUND", "UNAUTHORIZED", …).
	Code string `json:"code"`
	// Message says it in a sentence.
	Message string `json:"message"`
	// Details are the error's facts, an object or null.
	Details json.RawMessage `json:"details"`
}

// Error returns the code and the message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }
