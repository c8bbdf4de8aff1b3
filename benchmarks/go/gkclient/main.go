// Gatekeeper's external data client, as a load generator (standard library only).
//
// Every lookup does what Gatekeeper v3.20 does for one external_data call (open-policy-agent/frameworks,
// constraint/pkg/externaldata/request.go: DefaultSendRequestToProvider and getClient, read 2026-11): a new
// http.Client whose Timeout is the Provider's spec.timeout, a new http.Transport with only
// TLSClientConfig set (TLS 1.3 minimum, the client certificate, RootCAs from the base64 caBundle decoded
// for this call), a POST of the JSON ProviderRequest with Content-Type application/json under a context
// deadline of spec.timeout, io.ReadAll of the body, json.Unmarshal of the ProviderResponse. The transport
// is then dropped without CloseIdleConnections: its connection stays open and idle, never reused, until
// the provider closes it. The lookup fails when Gatekeeper's would: a transport error, a body that does not
// read or decode; and, for this benchmark, a status other than 200 or a non-empty systemError.
//
//	-mode sequential: -lookups lookups one after another;
//	-mode open:       lookups started at -rate per second for -duration whatever the answers do (open
//	                  loop); each lookup's latency counts from the moment it was due, so a stalled
//	                  server cannot hide its queue.
//
// Prints one JSON object: lookups, errors (with the first few messages), latency percentiles in ms, and
// the same for the time after the TLS handshake (net/http/httptrace: handshake done -> first response
// byte), which is where a server-side stall shows.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"
)

type provider struct {
	URL      string
	Timeout  int // seconds, the Provider's spec.timeout
	CABundle string
}

type providerRequest struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Request    struct {
		Keys []string `json:"keys,omitempty"`
	} `json:"request,omitempty"`
}

type providerResponse struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Response   struct {
		Idempotent bool `json:"idempotent,omitempty"`
		Items      []struct {
			Key   string      `json:"key,omitempty"`
			Value interface{} `json:"value,omitempty"`
			Error string      `json:"error,omitempty"`
		} `json:"items,omitempty"`
		SystemError string `json:"systemError,omitempty"`
	} `json:"response,omitempty"`
}

// getClient is frameworks' getClient: a new client and transport for every call.
func getClient(p *provider, clientCert *tls.Certificate) (*http.Client, error) {
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("only HTTPS scheme is supported")
	}
	client := &http.Client{Timeout: time.Duration(p.Timeout) * time.Second}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS13}
	if clientCert != nil {
		tlsConfig.Certificates = []tls.Certificate{*clientCert}
	}
	caBundleData, err := base64.StdEncoding.DecodeString(p.CABundle)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundleData) {
		return nil, fmt.Errorf("failed to append provider's CA bundle to certificate pool")
	}
	tlsConfig.RootCAs = pool
	client.Transport = &http.Transport{TLSClientConfig: tlsConfig}
	return client, nil
}

type sample struct {
	total, afterHandshake time.Duration
	err                   error
}

// send is frameworks' DefaultSendRequestToProvider, timed.
func send(ctx context.Context, p *provider, keys []string, clientCert *tls.Certificate, due time.Time) sample {
	body, err := json.Marshal(providerRequest{
		APIVersion: "externaldata.gatekeeper.sh/v1beta1",
		Kind:       "ProviderRequest",
		Request: struct {
			Keys []string `json:"keys,omitempty"`
		}{keys},
	})
	if err != nil {
		return sample{err: err}
	}
	client, err := getClient(p, clientCert)
	if err != nil {
		return sample{err: err}
	}
	req, err := http.NewRequest(http.MethodPost, p.URL, bytes.NewBuffer(body))
	if err != nil {
		return sample{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	var handshakeDone, firstByte time.Time
	trace := &httptrace.ClientTrace{
		TLSHandshakeDone:     func(tls.ConnectionState, error) { handshakeDone = time.Now() },
		GotFirstResponseByte: func() { firstByte = time.Now() },
	}
	ctx = httptrace.WithClientTrace(ctx, trace)
	ctx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Duration(p.Timeout)*time.Second))
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return sample{total: time.Since(due), err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return sample{total: time.Since(due), err: err}
	}
	var answer providerResponse
	if err := json.Unmarshal(respBody, &answer); err != nil {
		return sample{total: time.Since(due), err: err}
	}
	s := sample{total: time.Since(due), afterHandshake: firstByte.Sub(handshakeDone)}
	if resp.StatusCode != http.StatusOK {
		s.err = fmt.Errorf("HTTP %d", resp.StatusCode)
	} else if answer.Response.SystemError != "" {
		s.err = fmt.Errorf("systemError: %s", answer.Response.SystemError)
	}
	return s
}

type summary struct {
	Mode           string             `json:"mode"`
	Rate           float64            `json:"rate_per_s,omitempty"`
	Lookups        int                `json:"lookups"`
	Errors         int                `json:"errors"`
	ErrorSamples   []string           `json:"error_samples,omitempty"`
	Seconds        float64            `json:"seconds"`
	LatencyMs      map[string]float64 `json:"latency_ms"`
	AfterHandshake map[string]float64 `json:"after_handshake_ms"`
}

func percentiles(values []time.Duration) map[string]float64 {
	out := map[string]float64{}
	if len(values) == 0 {
		return out
	}
	sort.Slice(values, func(i, j int) bool { return values[i] < values[j] })
	at := func(p float64) float64 {
		i := int(p/100*float64(len(values)-1) + 0.5)
		return float64(values[i].Microseconds()) / 1000
	}
	out["p50"], out["p90"], out["p99"], out["max"] = at(50), at(90), at(99), at(100)
	return out
}

func main() {
	target := flag.String("url", "https://127.0.0.1:8443/", "the Provider's spec.url")
	timeout := flag.Int("timeout", 2, "the Provider's spec.timeout, seconds")
	caFile := flag.String("ca", "", "PEM CA of the serving certificate (the Provider's caBundle, before base64)")
	certFile := flag.String("cert", "", "Gatekeeper's client certificate")
	keyFile := flag.String("key", "", "Gatekeeper's client key")
	keysFile := flag.String("keys", "", "JSON array of key lists, one per lookup, used in turn")
	mode := flag.String("mode", "sequential", "sequential or open")
	lookups := flag.Int("lookups", 500, "lookups (sequential)")
	rate := flag.Float64("rate", 100, "lookups started per second (open)")
	duration := flag.Duration("duration", 10*time.Second, "how long to start lookups (open)")
	flag.Parse()

	pem, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatal(err)
	}
	p := &provider{URL: *target, Timeout: *timeout, CABundle: base64.StdEncoding.EncodeToString(pem)}
	var clientCert *tls.Certificate
	if *certFile != "" {
		pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		clientCert = &pair
	}
	raw, err := os.ReadFile(*keysFile)
	if err != nil {
		log.Fatal(err)
	}
	var keyLists [][]string
	if err := json.Unmarshal(raw, &keyLists); err != nil || len(keyLists) == 0 {
		log.Fatalf("%s: want a non-empty JSON array of key lists (%v)", *keysFile, err)
	}

	var samples []sample
	started := time.Now()
	out := summary{Mode: *mode}
	switch *mode {
	case "sequential":
		for i := 0; i < *lookups; i++ {
			samples = append(samples, send(context.Background(), p, keyLists[i%len(keyLists)], clientCert, time.Now()))
		}
	case "open":
		out.Rate = *rate
		n := int(*rate * duration.Seconds())
		results := make([]sample, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			due := started.Add(time.Duration(float64(i) / *rate * float64(time.Second)))
			time.Sleep(time.Until(due))
			wg.Add(1)
			go func(i int, due time.Time) {
				defer wg.Done()
				results[i] = send(context.Background(), p, keyLists[i%len(keyLists)], clientCert, due)
			}(i, due)
		}
		wg.Wait()
		samples = results
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
	out.Seconds = time.Since(started).Seconds()

	var totals, after []time.Duration
	for _, s := range samples {
		totals = append(totals, s.total) // a failed lookup's latency counts too: it is what the webhook waited
		if s.err != nil {
			out.Errors++
			if len(out.ErrorSamples) < 5 {
				out.ErrorSamples = append(out.ErrorSamples, s.err.Error())
			}
			continue
		}
		after = append(after, s.afterHandshake)
	}
	out.Lookups = len(samples)
	out.LatencyMs, out.AfterHandshake = percentiles(totals), percentiles(after)
	encoded, _ := json.Marshal(out)
	fmt.Println(string(encoded))
}
