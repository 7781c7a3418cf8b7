package ui

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// browser is a headless Chromium driven over --remote-debugging-pipe.
type browser struct {
	cmd     *exec.Cmd
	in      *os.File // our end of Chromium's fd 3 (commands)
	done    chan struct{}
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	readErr error
	stderr  bytes.Buffer
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser launches chromium and registers a cleanup that ends it and
// waits for the process and the reader goroutine.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (%v): run scripts/install-deps.sh or `apt-get install -y chromium`", err)
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{in: cmdW, done: make(chan struct{}), pending: map[int]chan cdpReply{}}
	b.cmd = exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1400,1000", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW} // fd 3, fd 4
	b.cmd.Stderr = &lockedWriter{w: &b.stderr, mu: &b.mu}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdR.Close()
	outW.Close()
	go b.read(outR)
	t.Cleanup(func() {
		cmdW.Close() // Chromium exits when its command pipe closes
		exited := make(chan error, 1)
		go func() { exited <- b.cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-exited
		}
		<-b.done
		outR.Close()
		if t.Failed() {
			b.mu.Lock()
			t.Logf("chromium stderr:\n%s", tail(b.stderr.String(), 3000))
			b.mu.Unlock()
		}
	})
	return b
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// read dispatches replies by id until Chromium closes its end; events are
// dropped.
func (b *browser) read(r io.Reader) {
	defer close(b.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("devtools pipe: %w", err)
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID *int `json:"id"`
			cdpReply
		}
		if err := json.Unmarshal(msg[:len(msg)-1], &m); err != nil || m.ID == nil {
			continue
		}
		b.mu.Lock()
		ch := b.pending[*m.ID]
		delete(b.pending, *m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one DevTools command (to the page session when session is not
// empty) and decodes its result into out.
func (b *browser) call(session, method string, params, out any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	req := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		req["sessionId"] = session
	}
	msg, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: write: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: chromium closed the pipe", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s: no reply in 20 s", method)
	}
}

// page is one tab.
type page struct {
	b       *browser
	session string
}

// open creates a tab at url and attaches to it.
func (b *browser) open(url string) (*page, error) {
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		return nil, err
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	return &page{b: b, session: att.SessionID}, nil
}

// eval runs a JavaScript expression in the page and decodes its value.
func (p *page) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluate %q: %s", expr, r.ExceptionDetails.Text)
	}
	if len(r.Result.Value) == 0 {
		return fmt.Errorf("evaluate %q: no value", expr)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// screenshot writes a PNG of the page to path.
func (p *page) screenshot(path string) error {
	var r struct{ Data string }
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		return fmt.Errorf("screenshot is not a PNG")
	}
	return os.WriteFile(path, png, 0o644)
}

// waitFor evaluates expr until check accepts its value, failing after d
// with the last value seen.
func (p *page) waitFor(t *testing.T, d time.Duration, what, expr string, check func(json.RawMessage) bool) json.RawMessage {
	t.Helper()
	deadline := time.Now().Add(d)
	var last json.RawMessage
	var lastErr error
	for time.Now().Before(deadline) {
		lastErr = p.eval(expr, &last)
		if lastErr == nil && check(last) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("page never showed %s within %v; last value %s, last error %v", what, d, last, lastErr)
	return nil
}
