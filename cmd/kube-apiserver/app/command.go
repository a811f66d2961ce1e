package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/freshcache/freshcache/pkg/apiserver"
)

// watchCacheFlagSet is the section of --help that holds our flags.
const watchCacheFlagSet = "watch cache"

// NewCommand returns the kube-apiserver command. It exits when the signal
// context (SIGTERM, SIGINT) is done, after the upstream graceful shutdown.
func NewCommand() *cobra.Command {
	server := options.NewServerRunOptions()
	watchCache := apiserver.NewOptions()
	gates := server.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	ctx := genericapiserver.SetupSignalContext()

	cmd := &cobra.Command{
		Use:   "kube-apiserver",
		Short: "The Kubernetes API server, with a choice of watch cache",
		Long: `kube-apiserver serves the Kubernetes API. This build is upstream's v1.37
server with one seam added: --watch-cache-implementation selects the watch cache
(freshcache serves consistent reads from memory; upstream is the stock cacher).`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// Feature gates and emulation versions must settle before any
			// option reads them.
			if err := server.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
				return err
			}
			// The server's loopback clients must not log warnings addressed to users.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(server.Logs, gates); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			return run(ctx, server, watchCache, gates)
		},
	}
	cmd.SetContext(ctx)

	sets := server.Flags()
	watchCache.AddFlags(sets.FlagSet(watchCacheFlagSet))
	verflag.AddFlags(sets.FlagSet("global"))
	globalflag.AddGlobalFlags(sets.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	server.Flagz = flagz.NamedFlagSetsReader{FlagSets: sets}
	for _, name := range sets.Order {
		cmd.Flags().AddFlagSet(sets.FlagSets[name])
	}
	width, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, sets, width)
	return cmd
}

// run completes and validates the options, builds upstream's server chain
// with our watch cache installed, and serves until ctx is done.
func run(ctx context.Context, server *options.ServerRunOptions, watchCache *apiserver.Options, gates featuregate.FeatureGate) error {
	completed, err := server.Complete(ctx)
	if err != nil {
		return err
	}
	errs := completed.Validate()
	errs = append(errs, watchCache.Validate()...)
	if len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	if mutable, ok := gates.(featuregate.MutableFeatureGate); ok {
		mutable.AddMetrics()
	}
	server.GenericServerRunOptions.ComponentGlobalsRegistry.AddMetrics()

	klog.InfoS("Starting kube-apiserver", "version", version.Get().String(), "watchCacheImplementation", watchCache.WatchCacheImplementation)
	if completed.InformerName == nil {
		name, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return err
		}
		completed.InformerName = name
	}

	config, err := upstream.NewConfig(completed)
	if err != nil {
		return err
	}
	if err := watchCache.ApplyTo(config); err != nil {
		return fmt.Errorf("installing the watch cache: %w", err)
	}
	completedConfig, err := config.Complete()
	if err != nil {
		return err
	}
	chain, err := upstream.CreateServerChain(completedConfig)
	if err != nil {
		return err
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}
