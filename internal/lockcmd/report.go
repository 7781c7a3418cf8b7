package lockcmd

import (
	"fmt"
	"io"

	"github.com/rs/zerolog"
)

// reporter says what happens on stderr: plain "zkraft lock: ..." lines for
// warnings and errors, or, with --log-level, zerolog JSON lines at that level.
type reporter struct {
	prog string
	w    io.Writer
	log  *zerolog.Logger
}

func newReporter(prog string, w io.Writer, level string) (*reporter, error) {
	r := &reporter{prog: prog, w: w}
	if level != "" {
		lvl, err := zerolog.ParseLevel(level)
		if err != nil {
			return nil, fmt.Errorf("--log-level %q: %w", level, err)
		}
		l := zerolog.New(w).Level(lvl).With().Timestamp().Str("cmd", prog).Logger()
		r.log = &l
	}
	return r, nil
}

// say reports msg; plain mode prints warnings and errors only.
func (r *reporter) say(lvl zerolog.Level, fields map[string]any, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.log != nil {
		r.log.WithLevel(lvl).Fields(fields).Msg(msg)
		return
	}
	if lvl >= zerolog.WarnLevel {
		fmt.Fprintf(r.w, "%s: %s\n", r.prog, msg)
	}
}

func (r *reporter) debug(fields map[string]any, format string, args ...any) {
	r.say(zerolog.DebugLevel, fields, format, args...)
}

func (r *reporter) info(fields map[string]any, format string, args ...any) {
	r.say(zerolog.InfoLevel, fields, format, args...)
}

func (r *reporter) warn(fields map[string]any, format string, args ...any) {
	r.say(zerolog.WarnLevel, fields, format, args...)
}

func (r *reporter) error(fields map[string]any, format string, args ...any) {
	r.say(zerolog.ErrorLevel, fields, format, args...)
}

// zkLogger passes go-zookeeper's own lines on at debug level.
type zkLogger struct{ r *reporter }

func (l zkLogger) Printf(format string, args ...any) {
	l.r.debug(nil, "go-zookeeper: "+format, args...)
}
