package command

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// outputs are the pipes a command writes its output to: one for both
// streams (only the tail is kept), or one each, read line by line as the
// command writes, for Spec.OnLine.
type outputs struct {
	r, w []*os.File // [stdout, stderr], or one pipe for both
}

func newOutputs(split bool) (*outputs, error) {
	n := 1
	if split {
		n = 2
	}
	o := &outputs{}
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			o.close()
			return nil, err
		}
		o.r, o.w = append(o.r, r), append(o.w, w)
	}
	return o, nil
}

// writers are the command's stdout and stderr.
func (o *outputs) writers() (stdout, stderr io.Writer) {
	return o.w[0], o.w[len(o.w)-1]
}

// closeWriters closes this process's copies of the write ends, once the
// child holds its own: a reader then sees EOF when the last holder is gone.
func (o *outputs) closeWriters() {
	for _, w := range o.w {
		_ = w.Close()
	}
}

func (o *outputs) close() {
	o.closeWriters()
	for _, r := range o.r {
		_ = r.Close()
	}
}

// stopReading ends the reads at once: a descendant out of reach holds a
// pipe open.
func (o *outputs) stopReading() {
	for _, r := range o.r {
		_ = r.SetReadDeadline(time.Now())
	}
}

// read reads the pipes until EOF (or stopReading): everything into tail,
// and, with onLine, each line as soon as it is read (into tail as a line
// of its own too, so the lines of the two streams never join).
func (o *outputs) read(t *tail, onLine func(Stream, string)) {
	if onLine == nil {
		_, _ = io.Copy(t, o.r[0])
		return
	}
	var mu sync.Mutex // one call of onLine, and one write to tail, at a time
	var wg sync.WaitGroup
	for i, r := range o.r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readLines(r, Stream(i+1), func(s Stream, line []byte) {
				text := line
				if n := len(text); n > 0 && text[n-1] == '\n' {
					text = text[:n-1]
				}
				mu.Lock()
				defer mu.Unlock()
				// As a line of its own, as OnLine has it: a piece of the
				// other stream must not join it.
				// (A copy: text is the reader's buffer, not to be written.)
				_, _ = t.Write(append(append(make([]byte, 0, len(text)+1), text...), '\n'))
				onLine(s, string(text))
			})
		}()
	}
	wg.Wait()
}

// readLines calls emit with each line read from r, its newline kept (a
// piece of a line longer than MaxLine, or the last line, has none).
func readLines(r io.Reader, s Stream, emit func(Stream, []byte)) {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			emit(s, line)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
