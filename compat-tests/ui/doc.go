// Package ui tests zkraft's web view (/ui on the AdminServer's port) in a
// real browser: headless Chromium (Debian's chromium, installed by
// scripts/install-deps.sh) driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages separated by NUL on file
// descriptors 3 and 4, so no WebSocket library is needed).
//
// TestLiveLocks holds a lock with go-zookeeper clients while two more wait,
// opens the page once, and waits until it shows the holder and the queue in
// order; then the holder releases and the same page, without a reload, must
// show the next holder and the shorter queue. It keeps a screenshot of each
// state (the paths are logged; ZKRAFT_UI_SCREENSHOTS picks the directory,
// default $TMPDIR/zkraft-ui-screenshots). A missing chromium fails the test
// with the install hint; nothing is skipped.
//
// TestLockDelayShown runs zkraft with lock-delay on and lets a lock
// holder's session expire (a raw session that never pings): the page must
// show its kept node as expired, with the time it goes, and the live waiter
// behind it as waiting.
//
// Run with `go test ./compat-tests/ui/ -count=1 -v`.
package ui
