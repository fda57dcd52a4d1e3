package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Contents is what an image layout tarball of one image holds, as Read finds it.
type Contents struct {
	// Index is the layout's index.json, and Manifest the one manifest it names.
	Index    ocispec.Index
	Manifest ocispec.Manifest
	// Digest is the manifest's: the image's digest.
	Digest digest.Digest
	Config ocispec.Image
	// Layers are the entries of each layer, lowest first; files hold their contents in Data.
	Layers []Layer
	// Blobs are the raw bytes of every blob by digest, layers as stored (compressed or not).
	Blobs map[digest.Digest][]byte
}

// Read reads back the image layout tarball at path, such as Write writes, and checks it: an
// index naming one manifest, every blob there and matching its descriptor's digest and size,
// each layer's uncompressed digest the configuration's diff id. It holds everything in
// memory: it is meant for checks of what Write wrote.
func Read(path string) (*Contents, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if files[hdr.Name], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	c := &Contents{Blobs: map[digest.Digest][]byte{}}
	blobOf := func(d ocispec.Descriptor) ([]byte, error) {
		b, ok := files[blobPath(d.Digest)]
		if !ok {
			return nil, fmt.Errorf("blob %s missing", d.Digest)
		}
		if digest.FromBytes(b) != d.Digest || int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s does not match its descriptor", d.Digest)
		}
		c.Blobs[d.Digest] = b
		return b, nil
	}
	var layout ocispec.ImageLayout
	if err := json.Unmarshal(files[ocispec.ImageLayoutFile], &layout); err != nil || layout.Version != ocispec.ImageLayoutVersion {
		return nil, fmt.Errorf("%s: no layout file of version %s (%v)", path, ocispec.ImageLayoutVersion, err)
	}
	if err := json.Unmarshal(files["index.json"], &c.Index); err != nil {
		return nil, fmt.Errorf("%s: index: %w", path, err)
	}
	if len(c.Index.Manifests) != 1 {
		return nil, fmt.Errorf("%s: the index names %d manifests, want one", path, len(c.Index.Manifests))
	}
	c.Digest = c.Index.Manifests[0].Digest
	b, err := blobOf(c.Index.Manifests[0])
	if err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", path, err)
	}
	if err := json.Unmarshal(b, &c.Manifest); err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", path, err)
	}
	if b, err = blobOf(c.Manifest.Config); err != nil {
		return nil, fmt.Errorf("%s: config: %w", path, err)
	}
	if err := json.Unmarshal(b, &c.Config); err != nil {
		return nil, fmt.Errorf("%s: config: %w", path, err)
	}
	if len(c.Config.RootFS.DiffIDs) != len(c.Manifest.Layers) {
		return nil, fmt.Errorf("%s: %d layers, %d diff ids", path, len(c.Manifest.Layers), len(c.Config.RootFS.DiffIDs))
	}
	for i, d := range c.Manifest.Layers {
		b, err := blobOf(d)
		if err != nil {
			return nil, fmt.Errorf("%s: layer %d: %w", path, i, err)
		}
		switch d.MediaType {
		case ocispec.MediaTypeImageLayer:
		case ocispec.MediaTypeImageLayerGzip:
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("%s: layer %d: %w", path, i, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				return nil, fmt.Errorf("%s: layer %d: %w", path, i, err)
			}
		default:
			return nil, fmt.Errorf("%s: layer %d of media type %s", path, i, d.MediaType)
		}
		if digest.FromBytes(b) != c.Config.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("%s: layer %d does not match its diff id", path, i)
		}
		l, err := Tar(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: layer %d: %w", path, i, err)
		}
		c.Layers = append(c.Layers, l)
	}
	return c, nil
}
