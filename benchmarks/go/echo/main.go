// TLS 1.3 HTTP echo in Go (standard library only): answers every POST with its own body. The
// physical limit of the benchmark: no lookups, no JSON, only HTTP over TLS on Go's runtime.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "address")
	cert := flag.String("cert", "", "serving certificate")
	key := flag.String("key", "", "serving key")
	clientCA := flag.String("client-ca", "", "require client certificates from this CA")
	flag.Parse()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	config := &tls.Config{MinVersion: tls.VersionTLS13}
	if *clientCA != "" {
		pem, err := os.ReadFile(*clientCA)
		if err != nil {
			log.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		config.ClientCAs, config.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	server := &http.Server{Addr: *listen, TLSConfig: config}
	log.Fatal(server.ListenAndServeTLS(*cert, *key))
}
