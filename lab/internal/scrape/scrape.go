package scrape

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// Samples returns every sample of body keyed by the text before its value:
// the metric name and its labels exactly as exposed, e.g.
// apiserver_freshcache_reads_total{resource="pods",served="cache"}, or
// the bare name of a metric without labels. Comment lines and lines whose
// value does not parse are skipped. The error is the scanner's (a line
// longer than 1 MiB); the samples read until then are returned with it.
func Samples(body []byte) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}
