// Reference external data provider in Go (standard library only): what a platform team would write
// from Gatekeeper's provider template. Same request, response shape and value as trainer-policy's
// provider: key "<namespace>/<name>", value {"found": bool, "activeReplicatedJobs": [...]}, from a
// JSON List of JobSets. TLS 1.3 only, optional mTLS. Used only as a benchmark anchor.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
)

type jobSet struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Status struct {
		ReplicatedJobsStatus []struct {
			Name   string `json:"name"`
			Active int    `json:"active"`
		} `json:"replicatedJobsStatus"`
	} `json:"status"`
}

type value struct {
	Found                bool     `json:"found"`
	ActiveReplicatedJobs []string `json:"activeReplicatedJobs"`
}

type item struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
}

type providerResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		Idempotent  bool   `json:"idempotent"`
		Items       []item `json:"items"`
		SystemError string `json:"systemError,omitempty"`
	} `json:"response"`
}

type providerRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		Keys []string `json:"keys"`
	} `json:"request"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "address")
	cert := flag.String("cert", "", "serving certificate")
	key := flag.String("key", "", "serving key")
	clientCA := flag.String("client-ca", "", "require client certificates from this CA")
	objects := flag.String("objects", "", "JSON List of JobSets")
	flag.Parse()

	raw, err := os.ReadFile(*objects)
	if err != nil {
		log.Fatal(err)
	}
	var list struct {
		Items []jobSet `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		log.Fatal(err)
	}
	values := make(map[string]json.RawMessage, len(list.Items))
	for _, js := range list.Items {
		v := value{Found: true, ActiveReplicatedJobs: []string{}}
		for _, s := range js.Status.ReplicatedJobsStatus {
			if s.Active > 0 {
				v.ActiveReplicatedJobs = append(v.ActiveReplicatedJobs, s.Name)
			}
		}
		b, _ := json.Marshal(v)
		values[js.Metadata.Namespace+"/"+js.Metadata.Name] = b
	}
	notFound, _ := json.Marshal(value{Found: false, ActiveReplicatedJobs: []string{}})

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var resp providerResponse
		resp.APIVersion, resp.Kind = "externaldata.gatekeeper.sh/v1beta1", "ProviderResponse"
		resp.Response.Idempotent = true
		w.Header().Set("Content-Type", "application/json")
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req providerRequest
		if r.Method != http.MethodPost || err != nil || json.Unmarshal(body, &req) != nil {
			resp.Response.SystemError = "bad request"
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(resp)
			return
		}
		resp.Response.Items = make([]item, 0, len(req.Request.Keys))
		for _, k := range req.Request.Keys {
			v, ok := values[k]
			if !ok {
				v = notFound
			}
			resp.Response.Items = append(resp.Response.Items, item{Key: k, Value: v})
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })

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
