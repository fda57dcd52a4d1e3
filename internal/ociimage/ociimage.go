// Package ociimage writes container images as OCI image layout tarballs, with no container
// engine and no registry: `ctr images import` loads one as it is, and registry clients push
// it (skopeo's oci-archive transport takes the tarball, crane its unpacked directory).
//
// An image's bytes depend on its description alone: a layer's entries are sorted by path and
// carry fixed times and only the owners the description gives, the JSON documents have one
// encoding, and gzip (Go's, at a fixed level) has one output for one input with one Go
// release. So the same files and settings give the same digest, wherever and whenever they
// are written.
package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image describes an image.
type Image struct {
	// Name is the reference the image is known by once imported, as pods name it:
	// "localhost/agentd:v1.2.0". The index names the image's manifest with it, for containerd
	// (io.containerd.image.name) and for OCI tools (org.opencontainers.image.ref.name).
	Name string
	// Layers are the image's file system, lowest first.
	Layers []Layer
	// Gzip compresses the layers: smaller to push and pull, slower to write.
	Gzip bool
	// Platform is the image's OS and architecture; empty fields mean linux and the
	// architecture this program was built for.
	Platform ocispec.Platform
	// Entrypoint, Cmd, Env, WorkingDir and User are the defaults of the image's containers.
	// User is "uid:gid" or a name of the image's /etc/passwd.
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	// ExposedPorts are the ports the image's containers serve on, as "3000/tcp".
	ExposedPorts []string
	// Labels annotate the image's configuration: org.opencontainers.image.version, …
	Labels map[string]string
}

// Write writes img to dst as an OCI image layout tarball: the layout file, the index naming
// the image, and the blobs (layers, configuration, manifest). It returns the manifest's
// descriptor, whose digest is the image's: what a registry addresses it by once pushed, and
// what `ctr images ls` shows once imported. dst is written whole or not at all.
func Write(dst string, img Image) (ocispec.Descriptor, error) {
	fail := func(err error) (ocispec.Descriptor, error) {
		return ocispec.Descriptor{}, fmt.Errorf("write image %s to %s: %w", img.Name, dst, err)
	}
	platform := img.Platform
	if platform.OS == "" {
		platform.OS = "linux"
	}
	if platform.Architecture == "" {
		platform.Architecture = runtime.GOARCH
	}
	// Layers go through files beside dst: one holds up to the whole binary of a program.
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".ociimage-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)

	var (
		layers  []blob
		diffIDs []digest.Digest
	)
	for i, l := range img.Layers {
		b, diffID, err := writeLayer(filepath.Join(tmp, fmt.Sprintf("layer-%d", i)), l, img.Gzip)
		if err != nil {
			return fail(fmt.Errorf("layer %d: %w", i, err))
		}
		layers, diffIDs = append(layers, b), append(diffIDs, diffID)
	}

	var ports map[string]struct{}
	for _, p := range img.ExposedPorts {
		if ports == nil {
			ports = map[string]struct{}{}
		}
		ports[p] = struct{}{}
	}
	config, err := jsonBlob(ocispec.MediaTypeImageConfig, ocispec.Image{
		Platform: platform,
		Config: ocispec.ImageConfig{
			User:         img.User,
			ExposedPorts: ports,
			Env:          img.Env,
			Entrypoint:   img.Entrypoint,
			Cmd:          img.Cmd,
			WorkingDir:   img.WorkingDir,
			Labels:       img.Labels,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
	})
	if err != nil {
		return fail(err)
	}
	layerDescs := make([]ocispec.Descriptor, len(layers))
	for i, l := range layers {
		layerDescs[i] = l.desc
	}
	manifest, err := jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config.desc,
		Layers:    layerDescs,
	})
	if err != nil {
		return fail(err)
	}
	named := manifest.desc
	named.Platform = &platform
	named.Annotations = map[string]string{
		// containerd names the imported image after this annotation.
		"io.containerd.image.name": img.Name,
		ocispec.AnnotationRefName:  img.Name,
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{named},
	})
	if err != nil {
		return fail(err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fail(err)
	}

	out, err := os.CreateTemp(tmp, "image-")
	if err != nil {
		return fail(err)
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	files := []blob{{path: ocispec.ImageLayoutFile, data: layout}, {path: "index.json", data: index}}
	files = append(files, layers...)
	files = append(files, config, manifest)
	for _, dir := range []string{ocispec.ImageBlobsDir, ocispec.ImageBlobsDir + "/" + digest.SHA256.String()} {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return fail(err)
		}
	}
	for _, f := range files {
		if err := f.writeTo(tw); err != nil {
			return fail(err)
		}
	}
	if err := tw.Close(); err != nil {
		return fail(err)
	}
	if err := out.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chmod(out.Name(), 0o644); err != nil {
		return fail(err)
	}
	if err := os.Rename(out.Name(), dst); err != nil {
		return fail(err)
	}
	return manifest.desc, nil
}

// blob is one file of the layout: its bytes in data, or in the file at file.
type blob struct {
	path string
	desc ocispec.Descriptor
	data []byte
	file string
}

func (b blob) writeTo(tw *tar.Writer) error {
	size := int64(len(b.data))
	if b.file != "" {
		size = b.desc.Size
	}
	if err := tw.WriteHeader(&tar.Header{Name: b.path, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if b.file == "" {
		_, err := tw.Write(b.data)
		return err
	}
	f, err := os.Open(b.file)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(tw, f)
	if err == nil && n != size {
		err = errors.New("a layer changed while the image was written")
	}
	return err
}

func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	return blob{path: blobPath(d.Digest), desc: d, data: data}, nil
}

func blobPath(d digest.Digest) string {
	return ocispec.ImageBlobsDir + "/" + d.Algorithm().String() + "/" + d.Encoded()
}

// writeLayer writes l to the file at dst, compressed or not, and returns its blob and its
// diff id (the digest of the uncompressed tar stream, which the configuration lists).
func writeLayer(dst string, l Layer, compress bool) (blob, digest.Digest, error) {
	f, err := os.Create(dst)
	if err != nil {
		return blob{}, "", err
	}
	defer f.Close()
	stored := &counter{h: sha256.New()}
	diff := sha256.New()
	w := io.MultiWriter(f, stored)
	mediaType := ocispec.MediaTypeImageLayer
	var gz *gzip.Writer
	if compress {
		mediaType = ocispec.MediaTypeImageLayerGzip
		// No name, no time, Go's default level: the same stream always compresses the same.
		if gz, err = gzip.NewWriterLevel(w, gzip.DefaultCompression); err != nil {
			return blob{}, "", err
		}
		w = gz
	}
	if err := l.write(io.MultiWriter(w, diff)); err != nil {
		return blob{}, "", err
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return blob{}, "", err
		}
	}
	if err := f.Close(); err != nil {
		return blob{}, "", err
	}
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigest(digest.SHA256, stored.h), Size: stored.n}
	return blob{path: blobPath(d.Digest), desc: d, file: dst}, digest.NewDigest(digest.SHA256, diff), nil
}

// counter hashes and counts what is written to it.
type counter struct {
	h hash.Hash
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}
