package metrics

import compbasemetrics "k8s.io/component-base/metrics"

// Every metric of the cache is apiserver_freshcache_<name> and ALPHA; these
// build the options so that no definition can miss the prefix or the
// stability level.

func kubeOpts(name, help string) compbasemetrics.KubeOpts {
	return compbasemetrics.KubeOpts{
		Namespace:      namespace,
		Subsystem:      subsystem,
		Name:           name,
		Help:           help,
		StabilityLevel: compbasemetrics.ALPHA,
	}
}

func counterOpts(name, help string) *compbasemetrics.CounterOpts {
	o := compbasemetrics.CounterOpts(kubeOpts(name, help))
	return &o
}

func gaugeOpts(name, help string) *compbasemetrics.GaugeOpts {
	o := compbasemetrics.GaugeOpts(kubeOpts(name, help))
	return &o
}

func histogramOpts(name, help string, buckets []float64) *compbasemetrics.HistogramOpts {
	o := kubeOpts(name, help)
	return &compbasemetrics.HistogramOpts{
		Namespace:      o.Namespace,
		Subsystem:      o.Subsystem,
		Name:           o.Name,
		Help:           o.Help,
		Buckets:        buckets,
		StabilityLevel: o.StabilityLevel,
	}
}

// labelsAnd is the group and resource labels and one more.
func labelsAnd(label string) []string {
	return append(append([]string(nil), labels...), label)
}
