// Unauthenticated connection flood for the provider benchmark (standard library only): -workers
// goroutines open TCP connections to -addr as fast as they can, together at most -rate per second, for
// -duration, and do one of:
//
//	-mode connect: close at once (FIN), without a byte: a TCP connect/close flood;
//	-mode hello:   send the first -bytes bytes of a real TLS 1.3 ClientHello, then reset (RST): a
//	               handshake flood that costs the server a read and a parse, never a finished handshake.
//
// Prints one JSON object: connections opened, connect errors, seconds.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// clientHello is the first flight of a Go TLS 1.3 client, captured over an in-memory pipe.
func clientHello() []byte {
	client, server := net.Pipe()
	go func() {
		_ = tls.Client(client, &tls.Config{ServerName: "provider", MinVersion: tls.VersionTLS13}).Handshake()
	}()
	buffer := make([]byte, 4096)
	n, err := server.Read(buffer)
	if err != nil {
		log.Fatal(err)
	}
	_ = server.Close()
	return buffer[:n]
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "server address")
	mode := flag.String("mode", "connect", "connect or hello")
	workers := flag.Int("workers", 4, "concurrent workers")
	rate := flag.Float64("rate", 1900, "at most this many connections per second, all workers together")
	size := flag.Int("bytes", 100, "bytes of the ClientHello sent (hello)")
	duration := flag.Duration("duration", 10*time.Second, "how long")
	flag.Parse()

	hello := clientHello()
	if *size < len(hello) {
		hello = hello[:*size]
	}
	var opened, failed atomic.Int64
	interval := time.Duration(float64(*workers) / *rate * float64(time.Second))
	started := time.Now()
	stop := started.Add(*duration)
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			next := started.Add(time.Duration(w) * interval / time.Duration(*workers))
			for time.Now().Before(stop) {
				time.Sleep(time.Until(next))
				next = next.Add(interval)
				conn, err := net.DialTimeout("tcp", *addr, time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				opened.Add(1)
				tcp := conn.(*net.TCPConn)
				if *mode == "hello" {
					_, _ = tcp.Write(hello)
					_ = tcp.SetLinger(0) // close sends RST
				}
				_ = tcp.Close()
			}
		}(w)
	}
	wg.Wait()
	seconds := time.Since(started).Seconds()
	out, _ := json.Marshal(map[string]any{
		"mode": *mode, "opened": opened.Load(), "connect_errors": failed.Load(), "seconds": seconds,
		"per_second": float64(opened.Load()) / seconds, "hello_bytes": len(hello),
	})
	fmt.Println(string(out))
}
