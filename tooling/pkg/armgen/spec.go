package armgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Obj is a JSON object that keeps its keys' order: a struct's fields and a generated file
// follow the order of the specification's properties.
type Obj struct {
	Keys []string
	M    map[string]any
}

func (o *Obj) get(k string) any {
	if o == nil {
		return nil
	}
	return o.M[k]
}

func (o *Obj) str(k string) string { s, _ := o.get(k).(string); return s }

func (o *Obj) obj(k string) *Obj { x, _ := o.get(k).(*Obj); return x }

func (o *Obj) bool(k string) bool { b, _ := o.get(k).(bool); return b }

func (o *Obj) num(k string) (float64, bool) {
	n, ok := o.get(k).(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func (o *Obj) strings(k string) []string {
	a, _ := o.get(k).([]any)
	var out []string
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (o *Obj) list(k string) []any { a, _ := o.get(k).([]any); return a }

// parseOrdered decodes JSON keeping object key order.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &Obj{M: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.M[k]; !dup {
					o.Keys = append(o.Keys, k)
				}
				o.M[k] = v
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			var a []any
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected delimiter %v", t)
	default:
		return tok, nil
	}
}

// Def is one definition of a specification file.
type Def struct {
	Name   string
	File   string // path of the file that holds it, relative to the spec root
	Schema *Obj
}

// specSet loads openapi.json and the files its $refs name, relative to the spec root.
type specSet struct {
	root  string
	files map[string]*Obj
}

func (s *specSet) load(rel string) (*Obj, error) {
	if o, ok := s.files[rel]; ok {
		return o, nil
	}
	data, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("read spec file: %w", err)
	}
	v, err := parseOrdered(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	o, ok := v.(*Obj)
	if !ok {
		return nil, fmt.Errorf("parse %s: not a JSON object", rel)
	}
	s.files[rel] = o
	return o, nil
}

// resolve returns the definition a $ref made in file from names.
func (s *specSet) resolve(from, ref string) (*Def, error) {
	file, frag, ok := strings.Cut(ref, "#")
	if !ok || !strings.HasPrefix(frag, "/definitions/") {
		return nil, fmt.Errorf("%s: unsupported $ref %q", from, ref)
	}
	if file == "" {
		file = from
	} else {
		file = path.Clean(path.Join(path.Dir(from), file))
	}
	o, err := s.load(file)
	if err != nil {
		return nil, err
	}
	name := strings.TrimPrefix(frag, "/definitions/")
	schema := o.obj("definitions").obj(name)
	if schema == nil {
		return nil, fmt.Errorf("%s: $ref %q: no such definition", from, ref)
	}
	return &Def{Name: name, File: file, Schema: schema}, nil
}
