package config

import (
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults of the webhook: section. They equal those of
// cmd/cronfence/internal/webhook.
const (
	// DefaultWebhookTimeout bounds one delivery attempt.
	DefaultWebhookTimeout = 5 * time.Second
	// DefaultWebhookRetries is how many times a failed delivery is retried.
	DefaultWebhookRetries = 3
	// DefaultWebhookQueueSize is how many alerts may wait for delivery.
	DefaultWebhookQueueSize = 256
	// MaxWebhookRetries bounds retries: with backoff doubling to 30s, ten
	// retries already span about four minutes per alert.
	MaxWebhookRetries = 10
)

// webhookKeys are the fields of webhook:.
var webhookKeys = []string{"url", "timeout", "retries", "headers", "queue_size"}

// Webhook is the webhook: section: alerts raised and resolved by this
// replica's absence checks are POSTed there as JSON (see docs/metrics.md).
type Webhook struct {
	// URL receives the POSTs (http:// or https://). Required.
	URL string
	// Timeout bounds each attempt. DefaultWebhookTimeout (5s) when not
	// given.
	Timeout time.Duration
	// Retries after a failed attempt, 0 to MaxWebhookRetries.
	// DefaultWebhookRetries (3) when not given.
	Retries int
	// Headers are sent with every request, e.g. Authorization; never nil.
	Headers map[string]string
	// QueueSize bounds the alerts waiting for delivery; more are dropped.
	// DefaultWebhookQueueSize (256) when not given.
	QueueSize int
	// Line is the line of the webhook: key in the file.
	Line int
}

// webhook decodes the section whose key is k and value n.
func (d *decoder) webhook(k, n *yaml.Node) *Webhook {
	w := &Webhook{Timeout: DefaultWebhookTimeout, Retries: DefaultWebhookRetries, QueueSize: DefaultWebhookQueueSize,
		Headers: map[string]string{}, Line: k.Line}
	urlSet := false
	if !d.mapping(n, "webhook", webhookKeys, func(key string, _, v *yaml.Node) {
		path := "webhook." + key
		switch key {
		case "url":
			urlSet = true
			if s, ok := d.str(v, path); ok {
				w.URL = s
				d.webhookURL(s, v.Line)
			}
		case "timeout":
			w.Timeout = d.positive(v, path, DefaultWebhookTimeout)
		case "retries":
			if x, ok := d.intIn(v, path, 0, MaxWebhookRetries); ok {
				w.Retries = x
			}
		case "queue_size":
			if x, ok := d.intIn(v, path, 1, 0); ok {
				w.QueueSize = x
			}
		case "headers":
			w.Headers = d.headers(v, path)
		}
	}) {
		return nil
	}
	if !urlSet {
		d.errorf(k.Line, "webhook", "url is required")
	}
	return w
}

// webhookURL checks the URL without quoting it back: it may hold a token.
func (d *decoder) webhookURL(s string, line int) {
	u, err := url.Parse(s)
	switch {
	case s == "":
		d.errorf(line, "webhook.url", "must not be empty")
	case err != nil:
		d.errorf(line, "webhook.url", "not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		d.errorf(line, "webhook.url", "scheme %q: must be http:// or https://", truncate(u.Scheme))
	case u.Host == "":
		d.errorf(line, "webhook.url", "has no host")
	}
}

func (d *decoder) headers(n *yaml.Node, path string) map[string]string {
	m := map[string]string{}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "must be a mapping (Name: value), got %s", kind(n))
		return m
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		kp := path + "." + name
		if k.Kind != yaml.ScalarNode || !headerName(name) {
			d.errorf(k.Line, path, "%s is not an HTTP header name", kind(k))
			continue
		}
		canon := strings.ToLower(name)
		if first, dup := seen[canon]; dup {
			d.errorf(k.Line, kp, "repeated (first on line %d; header names ignore case)", first)
			continue
		}
		seen[canon] = k.Line
		if canon == "content-type" || strings.HasPrefix(canon, "x-cronfence-") {
			d.errorf(k.Line, kp, "is set by cronfence")
			continue
		}
		if v = d.deref(v, kp); v == nil {
			continue
		}
		s, ok := d.text(v, kp)
		if !ok {
			continue
		}
		if strings.ContainsAny(s, "\r\n") {
			d.errorf(v.Line, kp, "must not contain line breaks")
			continue
		}
		m[name] = s
	}
	return m
}

// headerName reports whether s is an HTTP field name (RFC 9110 token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
