// Package scrape reads a /metrics endpoint the way Prometheus does, for
// tests: the text exposition, its lint problems (promlint, the checks of
// `promtool check metrics`, and the real promtool where installed) and
// sample values by name and labels.
package scrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Page is one scrape.
type Page struct {
	Text     []byte
	Families map[string]*dto.MetricFamily
}

// Get scrapes url (a /metrics endpoint) in the text format.
func Get(url string) (*Page, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Ask for the classic text format, what promtool reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return Parse(body)
}

// Parse reads a text exposition.
func Parse(text []byte) (*Page, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing the exposition: %w", err)
	}
	return &Page{Text: text, Families: mfs}, nil
}

// Lint returns the problems promlint (promtool check metrics) finds, one
// string each.
func (p *Page) Lint() ([]string, error) {
	problems, err := promlint.New(bytes.NewReader(p.Text)).Lint()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(problems))
	for i, pr := range problems {
		out[i] = pr.Metric + ": " + pr.Text
	}
	return out, nil
}

// Value returns the value of the sample of family name whose labels
// include every name=value pair of labels: a counter's or gauge's value, a
// histogram's sample count. ok is false when there is none.
func (p *Page) Value(name string, labels ...string) (v float64, ok bool) {
	mf := p.Families[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !hasLabel(m, labels[i], labels[i+1]) {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// Sum adds the values of every sample of family name matching labels.
func (p *Page) Sum(name string, labels ...string) float64 {
	mf := p.Families[name]
	if mf == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !hasLabel(m, labels[i], labels[i+1]) {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// Names returns the metric family names on the page with prefix.
func (p *Page) Names(prefix string) []string {
	var out []string
	for name := range p.Families {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// Promtool runs the real `promtool check metrics` on the page's exact
// bytes, as served, when promtool is on PATH, and fails t on anything it
// says and on any exit status but 0 (3 when it found problems, 1 when it
// could not parse the page). Without promtool it only logs that: Lint runs
// the same checks (promlint is promtool's linter, as a library), so no
// test needs the binary, and none installs it.
func (p *Page) Promtool(t testing.TB) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed; its checks ran as the promlint library (Page.Lint) only")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(p.Text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s\n--- the page it read:\n%s", err, out, p.Text)
	}
}
