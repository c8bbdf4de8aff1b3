// Closed-loop HTTPS load generator for the provider benchmark (standard library only).
//
//	-mode keepalive: each worker keeps one TLS 1.3 connection and sends requests back to back.
//	-mode newconn:   each request on a new TCP + TLS 1.3 connection (with the client certificate
//	                 when -cert is set), as Gatekeeper's client does; the request says
//	                 "Connection: close" so that every server closes it after the answer.
//
// Prints one JSON object: requests, errors, key_errors, seconds, latency percentiles in ms.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"
)

type result struct {
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	KeyErrors int     `json:"key_errors"`
	Seconds   float64 `json:"seconds"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	FirstErr  string  `json:"first_error,omitempty"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "server address")
	mode := flag.String("mode", "keepalive", "keepalive or newconn")
	caFile := flag.String("ca", "", "CA of the serving certificate")
	certFile := flag.String("cert", "", "client certificate (mTLS)")
	keyFile := flag.String("key", "", "client key (mTLS)")
	bodiesFile := flag.String("bodies", "", "JSON array of request bodies")
	workers := flag.Int("workers", 8, "concurrent workers")
	duration := flag.Duration("duration", 4*time.Second, "how long")
	check := flag.Bool("check", true, "count answers holding a per-key error")
	flag.Parse()

	pem, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	config := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	if *certFile != "" {
		pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	raw, err := os.ReadFile(*bodiesFile)
	if err != nil {
		log.Fatal(err)
	}
	var bodies []string
	if err := json.Unmarshal(raw, &bodies); err != nil {
		log.Fatal(err)
	}
	connection := "keep-alive"
	if *mode == "newconn" {
		connection = "close"
	}
	requests := make([][]byte, len(bodies))
	for i, b := range bodies {
		requests[i] = []byte(fmt.Sprintf("POST / HTTP/1.1\r\nHost: provider\r\nContent-Type: application/json\r\nConnection: %s\r\nContent-Length: %d\r\n\r\n%s", connection, len(b), b))
	}

	var mu sync.Mutex
	var all []time.Duration
	res := result{}
	stop := time.Now().Add(*duration)
	started := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			index := rng.Intn(len(requests))
			var lat []time.Duration
			errs, keyErrs := 0, 0
			firstErr := ""
			var conn *tls.Conn
			var reader *bufio.Reader
			fail := func(e error) {
				errs++
				if firstErr == "" {
					firstErr = e.Error()
				}
				if conn != nil {
					conn.Close()
					conn = nil
				}
			}
			for time.Now().Before(stop) {
				req := requests[index%len(requests)]
				index++
				t := time.Now()
				if conn == nil {
					c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
					if err != nil {
						fail(err)
						time.Sleep(10 * time.Millisecond)
						continue
					}
					conn = tls.Client(c, config)
					if err := conn.Handshake(); err != nil {
						fail(err)
						continue
					}
					reader = bufio.NewReaderSize(conn, 65536)
				}
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := conn.Write(req); err != nil {
					fail(err)
					continue
				}
				resp, err := http.ReadResponse(reader, nil)
				if err != nil {
					fail(err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					fail(fmt.Errorf("status %d %v", resp.StatusCode, err))
					continue
				}
				lat = append(lat, time.Since(t))
				if *check && (bytes.Contains(body, []byte(`"error"`)) || bytes.Contains(body, []byte(`"systemError"`))) {
					keyErrs++
				}
				if *mode == "newconn" {
					conn.Close()
					conn = nil
				}
			}
			if conn != nil {
				conn.Close()
			}
			mu.Lock()
			all = append(all, lat...)
			res.Errors += errs
			res.KeyErrors += keyErrs
			if res.FirstErr == "" {
				res.FirstErr = firstErr
			}
			mu.Unlock()
		}(int64(w + 1))
	}
	wg.Wait()
	res.Seconds = time.Since(started).Seconds()
	res.Requests = len(all)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p / 100 * float64(len(all)-1))
		return float64(all[i].Microseconds()) / 1000
	}
	res.P50Ms, res.P99Ms, res.MaxMs = pct(50), pct(99), pct(100)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}
