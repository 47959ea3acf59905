// Package browser drives the dashboard of real `cronfence serve` processes
// in headless Chromium (Debian's chromium at /usr/bin/chromium, driven with
// chromedp): the jobs table shows the live state, a pause from the page
// reaches every replica, and a trigger refused with 409 shows as a message.
// Screenshots are saved to $ARTIFACTS, or to a directory under the system's
// temporary directory that the test prints.
//
//	cd e2e && go test -count=1 -v ./browser/    # or: make browser
//
// Without /usr/bin/chromium the tests fail, except under -short, where they
// skip saying so.
package browser
