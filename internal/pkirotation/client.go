package pkirotation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// Client calls a holder's rotation API as the identity of its files (the maintenance
// workload's), verifying that the server is the holder (ServerIdentity's name).
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the API at addr (host:port). files.CA verifies the holder;
// files.Cert and Key are the caller's certificate, re-read when they change.
func NewClient(addr string, files tlsconfig.Files) (*Client, error) {
	if files.CA == "" || files.Cert == "" || files.Key == "" {
		return nil, fmt.Errorf("rotation API %s: needs a CA, a client certificate and a key", addr)
	}
	files.ServerName = identity.ServerName(ServerIdentity)
	cfg, err := files.Client(addr)
	if err != nil {
		return nil, fmt.Errorf("rotation API %s: %w", addr, err)
	}
	return &Client{base: "https://" + addr, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}, nil
}

// Request asks for a rotation of scope under key; asking again with the same key returns the
// same rotation. ErrBusy: another rotation runs.
func (c *Client) Request(ctx context.Context, key string, scope Scope) (*Rotation, error) {
	b, err := json.Marshal(rotationRequest{Key: key, Scope: scope})
	if err != nil {
		return nil, err
	}
	var out Rotation
	if err := c.do(ctx, http.MethodPost, "/v1/rotations", b, &out); err != nil {
		return nil, fmt.Errorf("request rotation %s (%s): %w", key, scope, err)
	}
	return &out, nil
}

// Get reads the rotation of key; ErrNotFound when the holder has none.
func (c *Client) Get(ctx context.Context, key string) (*Rotation, error) {
	var out Rotation
	if err := c.do(ctx, http.MethodGet, "/v1/rotations/"+key, nil, &out); err != nil {
		return nil, fmt.Errorf("get rotation %s: %w", key, err)
	}
	return &out, nil
}

// Region reads the region's name and listeners.
func (c *Client) Region(ctx context.Context) (*Region, error) {
	var out Region
	if err := c.do(ctx, http.MethodGet, "/v1/region", nil, &out); err != nil {
		return nil, fmt.Errorf("read the region's listeners: %w", err)
	}
	return &out, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
		return json.Unmarshal(raw, out)
	}
	var e apiError
	_ = json.Unmarshal(raw, &e)
	msg := strings.TrimSpace(e.Message)
	switch {
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s", ErrForbidden, msg)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, msg)
	case e.Code == "Busy":
		return fmt.Errorf("%w: %s", ErrBusy, msg)
	case e.Code == "TooSoon":
		return fmt.Errorf("%w: %s", ErrTooSoon, msg)
	case e.Code == "KeyReused":
		return fmt.Errorf("%w: %s", ErrKeyReused, msg)
	}
	return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, msg)
}
