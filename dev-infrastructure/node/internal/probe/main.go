// Command probe is the node tests' in-pod network check (dev-infrastructure/node): run in a pod,
// it serves a fixed text over HTTP, or fetches a URL through the pod's own DNS and routes.
//
//	probe serve ADDR TEXT      answer every request with TEXT until SIGTERM
//	probe get URL [TIMEOUT]    GET URL until it answers 200 (default 60s), print the body, exit 0
//	                           (exit 1 with the last error when TIMEOUT passes)
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: probe serve ADDR TEXT | probe get URL [TIMEOUT]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		if len(os.Args) != 4 {
			os.Exit(2)
		}
		serve(os.Args[2], os.Args[3])
	case "get":
		timeout := 60 * time.Second
		if len(os.Args) > 3 {
			d, err := time.ParseDuration(os.Args[3])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			timeout = d
		}
		body, err := get(os.Args[2], timeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(body)
	default:
		os.Exit(2)
	}
}

// serve handles SIGTERM: as a pod's PID 1 it would otherwise ignore it and every deletion would
// wait out the grace period. A slow or idle caller is closed as our services close one (a test
// fixture, so the limits are written here rather than taken from internal/serverlimits, which
// would bring gRPC into the pod's image).
func serve(addr, text string) {
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, text)
		})}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func get(url string, timeout time.Duration) (string, error) {
	client := &http.Client{Timeout: 3 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		body, err := getOnce(client, url)
		if err == nil {
			return body, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("GET %s: %w", url, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func getOnce(client *http.Client, url string) (string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}
