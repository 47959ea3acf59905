package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client speaks the admin API over HTTP.
type Client struct {
	// Base is the server's base URL, http:// or https://, without the API's
	// path (http://cron-1:8080, or http://svc:8080/cron under a prefix).
	Base string
	// Token is the bearer token sent with every request.
	Token string
	// HTTP sends the requests. Defaults to http.DefaultClient; bound each
	// call with its context.
	HTTP *http.Client
}

// maxAnswerBytes bounds the body of an answer the client reads.
const maxAnswerBytes = 32 << 20

// Do sends one request with body (JSON-encoded, when not nil) to path
// under Base and decodes a 2xx answer into out (when not nil). Any other
// status is returned as *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	base, err := url.Parse(strings.TrimRight(c.Base, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", c.Base)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("contacting %s: %w", base.Host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", base.Host, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := &Error{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || ae.Code == "" {
			ae.Code = strconv.Itoa(resp.StatusCode)
			ae.Message = strings.TrimSpace(string(data))
			if ae.Message == "" {
				ae.Message = http.StatusText(resp.StatusCode)
			}
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
	}
	return nil
}
