package consensus

import (
	"fmt"

	"github.com/rs/zerolog"
	"go.etcd.io/raft/v3"
)

// raftLogger adapts a zerolog.Logger to raft.Logger. It is installed per node
// through raft.Config.Logger; the package never touches raft's global logger.
type raftLogger struct {
	lg zerolog.Logger
}

var _ raft.Logger = (*raftLogger)(nil)

func newRaftLogger(lg zerolog.Logger) *raftLogger {
	return &raftLogger{lg: lg.With().Str("lib", "raft").Logger()}
}

func (l *raftLogger) Debug(v ...interface{}) { l.lg.Debug().Msg(fmt.Sprint(v...)) }
func (l *raftLogger) Debugf(format string, v ...interface{}) {
	l.lg.Debug().Msgf(format, v...)
}
func (l *raftLogger) Info(v ...interface{}) { l.lg.Info().Msg(fmt.Sprint(v...)) }
func (l *raftLogger) Infof(format string, v ...interface{}) {
	l.lg.Info().Msgf(format, v...)
}
func (l *raftLogger) Warning(v ...interface{}) { l.lg.Warn().Msg(fmt.Sprint(v...)) }
func (l *raftLogger) Warningf(format string, v ...interface{}) {
	l.lg.Warn().Msgf(format, v...)
}
func (l *raftLogger) Error(v ...interface{}) { l.lg.Error().Msg(fmt.Sprint(v...)) }
func (l *raftLogger) Errorf(format string, v ...interface{}) {
	l.lg.Error().Msgf(format, v...)
}

// Fatal logs and panics instead of exiting the process, so a library never
// calls os.Exit and deferred cleanup in the embedding program still runs.
func (l *raftLogger) Fatal(v ...interface{}) {
	msg := fmt.Sprint(v...)
	l.lg.Error().Bool("fatal", true).Msg(msg)
	panic(msg)
}

// Fatalf is Fatal with a format.
func (l *raftLogger) Fatalf(format string, v ...interface{}) {
	l.Fatal(fmt.Sprintf(format, v...))
}

// Panic logs and panics.
func (l *raftLogger) Panic(v ...interface{}) {
	msg := fmt.Sprint(v...)
	l.lg.Error().Bool("panic", true).Msg(msg)
	panic(msg)
}

// Panicf is Panic with a format.
func (l *raftLogger) Panicf(format string, v ...interface{}) {
	l.Panic(fmt.Sprintf(format, v...))
}
