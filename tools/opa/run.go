package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/plugins"
	bundleplugin "github.com/open-policy-agent/opa/v1/plugins/bundle"
	"github.com/open-policy-agent/opa/v1/server"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"
)

type runParams struct {
	serverMode         bool
	configFile         string
	addrs              []string
	bundleMode         bool
	ignore             []string
	pubKey             string
	pubKeyID           string
	algorithm          string
	scope              string
	skipBundleVerify   bool
	excludeVerifyFiles []string
	logLevel           string
	readyTimeout       int
	errLimit           int
}

func runCommand() *cobra.Command {
	var p runParams
	cmd := &cobra.Command{
		Use:   "run [files]",
		Short: "Start OPA: activate the given bundles and files, and with --server serve OPA's REST API",
		Long: `Start OPA as 'opa run' does, built from OPA's plugins, bundle, download, server and storage/inmem packages
(OPA's runtime package itself does not build against Debian's packages). Paths (bundles with -b, signatures
verified with --verification-key) are loaded and activated into the store exactly as OPA's runtime does; an
error exits 1. With --server, OPA's REST API listens on --addr, and the 'bundles' of the --config-file are
downloaded (HTTP or OCI services), verified against its 'keys' and activated by OPA's bundle plugin. Without
--server the command ends once everything is activated (where 'opa run' would start its REPL).`,
		RunE: func(_ *cobra.Command, args []string) error { return opaRun(&p, args) },
	}
	cmd.Flags().BoolVarP(&p.serverMode, "server", "s", false, "start the runtime in server mode")
	cmd.Flags().StringVarP(&p.configFile, "config-file", "c", "", "set path of configuration file")
	cmd.Flags().StringSliceVarP(&p.addrs, "addr", "a", []string{"localhost:8181"}, "set listening address of the server (e.g., [ip]:<port> for TCP)")
	cmd.Flags().IntVar(&p.readyTimeout, "ready-timeout", 0, "wait (in seconds) for configured plugins before starting server (value <= 0 disables ready check)")
	cmd.Flags().StringVarP(&p.logLevel, "log-level", "l", "info", "set log level (debug, info, error)")
	addBundleModeFlag(cmd.Flags(), &p.bundleMode)
	addIgnoreFlag(cmd.Flags(), &p.ignore)
	addMaxErrorsFlag(cmd.Flags(), &p.errLimit)
	cmd.Flags().StringVarP(&p.pubKey, "verification-key", "", "", "set the secret (HMAC) or path of the PEM file containing the public key (RSA and ECDSA)")
	cmd.Flags().StringVarP(&p.pubKeyID, "verification-key-id", "", "default", "name assigned to the verification key used for bundle verification")
	cmd.Flags().StringVarP(&p.algorithm, "signing-alg", "", "RS256", "name of the signing algorithm")
	cmd.Flags().StringVarP(&p.scope, "scope", "", "", "scope to use for bundle signature verification")
	cmd.Flags().BoolVarP(&p.skipBundleVerify, "skip-verify", "", false, "disables bundle signature verification")
	cmd.Flags().StringSliceVarP(&p.excludeVerifyFiles, "exclude-files-verify", "", []string{}, "set file names to exclude during bundle verification")
	return cmd
}

func opaRun(p *runParams, args []string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var bvc *bundle.VerificationConfig
	if p.pubKey != "" {
		keyConfig, err := keys.NewKeyConfig(p.pubKey, p.algorithm, p.scope)
		if err != nil {
			return err
		}
		bvc = bundle.NewVerificationConfig(map[string]*keys.Config{p.pubKeyID: keyConfig}, p.pubKeyID, p.scope, p.excludeVerifyFiles)
		if !p.bundleMode {
			return errors.New("enable bundle mode (ie. --bundle) to verify bundle files or directories")
		}
	}
	filter := loaderFilter{Ignore: p.ignore}.Apply

	// What OPA's runtime does with its paths (internal/runtime/init LoadPaths): bundles in bundle mode,
	// otherwise every file as a policy or data document.
	initBundles := map[string]*bundle.Bundle{}
	var files loader.Result
	if p.bundleMode {
		for _, path := range args {
			b, err := loader.NewFileLoader().
				WithBundleVerificationConfig(bvc).
				WithSkipBundleVerification(p.skipBundleVerify).
				WithFilter(filter).
				WithProcessAnnotation(true).
				AsBundle(path)
			if err != nil {
				return fmt.Errorf("load error: %w", err)
			}
			initBundles[path] = b
		}
	} else if len(args) > 0 {
		loaded, err := loader.NewFileLoader().WithProcessAnnotation(true).Filtered(args, filter)
		if err != nil {
			return fmt.Errorf("load error: %w", err)
		}
		files = *loaded
	}

	var config []byte
	if p.configFile != "" {
		var err error
		if config, err = os.ReadFile(p.configFile); err != nil {
			return fmt.Errorf("config error: %w", err)
		}
	}
	logger := logging.New()
	level, err := logLevel(p.logLevel)
	if err != nil {
		return err
	}
	logger.SetLevel(level)

	store := inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	manager, err := plugins.New(config, newID(), store,
		plugins.InitBundles(initBundles),
		plugins.InitFiles(files),
		plugins.MaxErrors(p.errLimit),
		plugins.Logger(logger),
		plugins.ConsoleLogger(logger),
		plugins.EnablePrintStatements(level >= logging.Info),
	)
	if err != nil {
		return fmt.Errorf("config error: %w", err)
	}
	// Activation: the bundles and files go into the store and compile together (bundle.Activate).
	if err := manager.Init(ctx); err != nil {
		return fmt.Errorf("initialization error: %w", err)
	}
	if !p.serverMode {
		return nil
	}

	// The bundle plugin, configured as OPA's discovery configures it from the boot configuration.
	if manager.Config.Bundles != nil {
		trigger := plugins.DefaultTriggerMode
		bundleConfig, err := bundleplugin.NewConfigBuilder().
			WithBytes(manager.Config.Bundles).
			WithServices(manager.Services()).
			WithKeyConfigs(manager.PublicKeys()).
			WithTriggerMode(&trigger).
			Parse()
		if err != nil {
			return fmt.Errorf("config error: %w", err)
		}
		if bundleConfig != nil {
			manager.Register(bundleplugin.Name, bundleplugin.New(bundleConfig, manager))
		}
	}
	if err := manager.Start(ctx); err != nil {
		return fmt.Errorf("plugins error: %w", err)
	}
	defer manager.Stop(ctx)

	srv, err := server.New().
		WithStore(store).
		WithManager(manager).
		WithCompilerErrorLimit(p.errLimit).
		WithAddresses(p.addrs).
		Init(ctx)
	if err != nil {
		return fmt.Errorf("unable to initialize server: %w", err)
	}
	if p.readyTimeout > 0 {
		ready := func() bool {
			for _, status := range manager.PluginStatus() {
				if status != nil && status.State != plugins.StateOK {
					return false
				}
			}
			return true
		}
		if err := util.WaitFunc(ready, 100*time.Millisecond, time.Duration(p.readyTimeout)*time.Second); err != nil {
			return fmt.Errorf("failed to wait for plugins activation: %w", err)
		}
	}
	loops, err := srv.Listeners()
	if err != nil {
		return fmt.Errorf("unable to create listeners: %w", err)
	}
	errc := make(chan error, len(loops))
	for _, loop := range loops {
		go func(serve server.Loop) { errc <- serve() }(loop)
	}
	logger.WithFields(map[string]interface{}{"addrs": p.addrs}).Info("Initializing server.")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-signals:
		logger.Info("Shutting down...")
		shutdown, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		return err
	}
}

func logLevel(name string) (logging.Level, error) {
	switch strings.ToLower(name) {
	case "debug":
		return logging.Debug, nil
	case "info":
		return logging.Info, nil
	case "warn":
		return logging.Warn, nil
	case "error":
		return logging.Error, nil
	}
	return logging.Info, fmt.Errorf("invalid argument %q for \"-l, --log-level\" flag: must be one of debug, info, warn, error", name)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
