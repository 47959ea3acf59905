package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const webhookJobs = `
jobs:
  - name: a
    schedule: "* * * * *"
    command: ["true"]
`

func TestWebhookSection(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
webhook:
  url: https://hooks.example.com/cron/${ADMIN_TOKEN}
  timeout: 2s
  retries: 0
  queue_size: 10
  headers:
    Authorization: Bearer ${ADMIN_TOKEN}
    X-Team: 7
`+webhookJobs)
	want := &Webhook{
		URL: "https://hooks.example.com/cron/s3cret-admin", Timeout: 2 * time.Second, Retries: 0, QueueSize: 10,
		Headers: map[string]string{"Authorization": "Bearer s3cret-admin", "X-Team": "7"}, Line: 1,
	}
	if diff := cmp.Diff(want, f.Webhook); diff != "" {
		t.Fatalf("webhook (-want +got):\n%s", diff)
	}
}

func TestWebhookDefaults(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
webhook:
  url: http://127.0.0.1:9000/alerts
`+webhookJobs)
	want := &Webhook{URL: "http://127.0.0.1:9000/alerts", Timeout: DefaultWebhookTimeout, Retries: DefaultWebhookRetries,
		QueueSize: DefaultWebhookQueueSize, Headers: map[string]string{}, Line: 1}
	if diff := cmp.Diff(want, f.Webhook); diff != "" {
		t.Fatalf("webhook (-want +got):\n%s", diff)
	}
	if f := mustParse(t, webhookJobs); f.Webhook != nil {
		t.Fatalf("no webhook: section gave %+v", f.Webhook)
	}
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"webhook:\n  timeout: 1s\n", "cronfence.yaml:1: webhook: url is required"},
		{"webhook:\n  url: ftp://x/y\n", `cronfence.yaml:2: webhook.url: scheme "ftp": must be http:// or https://`},
		{"webhook:\n  url: http:///nohost\n", "cronfence.yaml:2: webhook.url: has no host"},
		{"webhook:\n  url: http://x\n  timeout: 0s\n", "cronfence.yaml:3: webhook.timeout: must be positive; leave it out for 5s"},
		{"webhook:\n  url: http://x\n  timeout: 5\n", `cronfence.yaml:3: webhook.timeout: 5 is a bare number`},
		{"webhook:\n  url: http://x\n  retries: 11\n", "cronfence.yaml:3: webhook.retries: 11 must be between 0 and 10"},
		{"webhook:\n  url: http://x\n  retries: -1\n", "cronfence.yaml:3: webhook.retries: -1 must be between 0 and 10"},
		{"webhook:\n  url: http://x\n  queue_size: 0\n", "cronfence.yaml:3: webhook.queue_size: 0 must be at least 1"},
		{"webhook:\n  url: http://x\n  headers: {Bad Name: v}\n", `cronfence.yaml:3: webhook.headers: "Bad Name" is not an HTTP header name`},
		{"webhook:\n  url: http://x\n  headers:\n    Content-Type: text/plain\n", "cronfence.yaml:4: webhook.headers.Content-Type: is set by cronfence"},
		{"webhook:\n  url: http://x\n  headers:\n    A: \"1\"\n    a: \"2\"\n", "cronfence.yaml:5: webhook.headers.a: repeated (first on line 4"},
		{"webhook:\n  url: http://x\n  headers: [a]\n", "cronfence.yaml:3: webhook.headers: must be a mapping"},
		{"webhook:\n  url: http://x\n  secret: y\n", "cronfence.yaml:3: webhook.secret: unknown field; expected one of url, timeout, retries, headers, queue_size"},
		{"webhook: http://x\n", "cronfence.yaml:1: webhook: must be a mapping (key: value)"},
	} {
		_, err := parseTest(t, tc.src+webhookJobs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.src, err, tc.want)
		}
	}
}
