package server

import (
	"github.com/rs/zerolog"

	"github.com/zkraft/zkraft/internal/zoocfg"
)

// Config is a zkraft server's configuration: ZooKeeper's zoo.cfg keys as
// typed settings. Parsing lives in internal/zoocfg.
type Config = zoocfg.Config

// TLSSettings are one side's ssl.* keys (clients or quorum), as written.
type TLSSettings = zoocfg.TLSSettings

// Default returns the embedded defaults: client port 2181, data in
// ./zkraft-data, tickTime 2000, as `zkraft serve` uses without a file.
func Default() Config { return zoocfg.Default() }

// Load reads a zoo.cfg file on top of Default(). Unknown keys are logged as
// warnings, not errors; malformed values are errors.
func Load(path string, log zerolog.Logger) (Config, error) { return zoocfg.Load(path, log) }

// PrometheusProviderClass is the metricsProvider.className that turns the
// Prometheus endpoint on, as in ZooKeeper.
const PrometheusProviderClass = zoocfg.PrometheusProviderClass

// knownFourLetterWords lists the commands a whitelist of "*" enables.
var knownFourLetterWords = zoocfg.KnownFourLetterWords
