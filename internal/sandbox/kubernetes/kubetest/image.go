package kubetest

import (
	"archive/tar"
	"bytes"
	_ "crypto/sha256" // go-digest computes digests with the hash registered here
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image describes a single-layer image made from a directory tree.
type Image struct {
	// Name is the reference the image is imported under, as pods name it:
	// "localhost/kubetest/busybox:static".
	Name string
	// Root is the directory that becomes the image's file system. Regular files, directories
	// and symbolic links are copied, owned by root, with their permission bits; anything else
	// is an error.
	Root string
	// Entrypoint, Cmd, Env and WorkingDir are the image's defaults for its containers.
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

// WriteImage writes img as an OCI image layout tarball (one uncompressed layer, its config,
// a manifest, and an index naming the image), which `ctr images import` and
// Cluster.ImportImage load as they are. The same tree gives the same bytes: entries are in
// lexical order and carry no times or owners.
func WriteImage(dst string, img Image) (err error) {
	var layer bytes.Buffer
	if err := writeLayer(&layer, img.Root); err != nil {
		return fmt.Errorf("image %s: layer of %s: %w", img.Name, img.Root, err)
	}
	layerDesc := descriptor(ocispec.MediaTypeImageLayer, layer.Bytes())

	config, err := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			Env:        img.Env,
			WorkingDir: img.WorkingDir,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return err
	}
	configDesc := descriptor(ocispec.MediaTypeImageConfig, config)

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := descriptor(ocispec.MediaTypeImageManifest, manifest)
	manifestDesc.Platform = &ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	manifestDesc.Annotations = map[string]string{
		// containerd names the imported image after this annotation.
		"io.containerd.image.name": img.Name,
		ocispec.AnnotationRefName:  img.Name,
	}

	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}

	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", index},
		{blobPath(layerDesc), layer.Bytes()},
		{blobPath(configDesc), config},
		{blobPath(manifestDesc), manifest},
	} {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func descriptor(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType: mediaType,
		Digest:    digest.FromBytes(data),
		Size:      int64(len(data)),
	}
}

func blobPath(d ocispec.Descriptor) string {
	return "blobs/" + d.Digest.Algorithm().String() + "/" + d.Digest.Encoded()
}

// writeLayer writes the tree at root as an uncompressed tar layer.
func writeLayer(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Name:    filepath.ToSlash(rel),
			Mode:    int64(info.Mode().Perm()),
			ModTime: time.Unix(0, 0),
			Format:  tar.FormatPAX,
		}
		// tar's mode field carries the special bits in their traditional octal places.
		if info.Mode()&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
		}
		if info.Mode()&fs.ModeSetgid != 0 {
			hdr.Mode |= 0o2000
		}
		if info.Mode()&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case info.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(path); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		default:
			return fmt.Errorf("%s: %v is neither a file, a directory nor a symbolic link", path, info.Mode().Type())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		if err == nil && n != hdr.Size {
			err = errors.New("changed while being read")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
