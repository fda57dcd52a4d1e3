package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Entry is one file, directory or symbolic link of a layer.
type Entry struct {
	// Path is where the entry is in the image: slash-separated, relative to the image's root
	// and clean ("etc/passwd", not "/etc/passwd" or "etc/../etc/passwd").
	Path string
	// Mode is the entry's type (none for a regular file, fs.ModeDir or fs.ModeSymlink) and
	// its permission bits, fs.ModeSetuid, fs.ModeSetgid and fs.ModeSticky included.
	Mode fs.FileMode
	// Data is a regular file's contents, unless Source names the file to copy them from,
	// which is read when the layer is written.
	Data   []byte
	Source string
	// Link is a symbolic link's target.
	Link string
	// UID and GID own the entry in the image: root unless set. No user or group name is
	// recorded, and nothing of the machine's owners.
	UID, GID int
}

// Layer is the entries of one layer, in any order: Write sorts them by path. A directory
// whose entry is missing is made by whatever unpacks the layer.
type Layer []Entry

// Dir returns the layer of the tree at root: its regular files (read when the layer is
// written), directories and symbolic links, owned by root, with their permission bits.
// Anything else is an error.
func Dir(root string) (Layer, error) {
	var l Layer
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := Entry{Path: filepath.ToSlash(rel), Mode: info.Mode() & (fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch {
		case d.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			e.Source = p
		default:
			return fmt.Errorf("%s: %v is neither a file, a directory nor a symbolic link", p, info.Mode().Type())
		}
		l = append(l, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", root, err)
	}
	return l, nil
}

// Tar returns the layer of a tar stream's regular files, directories and symbolic links,
// with their permission bits and owners' ids; anything else is an error.
func Tar(r io.Reader) (Layer, error) {
	var l Layer
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return l, nil
		}
		if err != nil {
			return nil, err
		}
		p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if p == "" {
			continue // the root itself
		}
		e := Entry{Path: p, Mode: modeOf(hdr.Mode), UID: hdr.Uid, GID: hdr.Gid}
		switch hdr.Typeflag {
		case tar.TypeDir:
			e.Mode |= fs.ModeDir
		case tar.TypeSymlink:
			e.Mode |= fs.ModeSymlink
			e.Link = hdr.Linkname
		case tar.TypeReg:
			if e.Data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: entry of type %q is neither a file, a directory nor a symbolic link", hdr.Name, hdr.Typeflag)
		}
		l = append(l, e)
	}
}

// Mode bits of a tar header for the special bits, in their traditional octal places.
const (
	tarSetuid = 0o4000
	tarSetgid = 0o2000
	tarSticky = 0o1000
)

func modeOf(tarMode int64) fs.FileMode {
	m := fs.FileMode(tarMode).Perm()
	if tarMode&tarSetuid != 0 {
		m |= fs.ModeSetuid
	}
	if tarMode&tarSetgid != 0 {
		m |= fs.ModeSetgid
	}
	if tarMode&tarSticky != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= tarSetuid
	}
	if m&fs.ModeSetgid != 0 {
		mode |= tarSetgid
	}
	if m&fs.ModeSticky != 0 {
		mode |= tarSticky
	}
	return mode
}

// epoch is every entry's time: a layer's bytes depend on its entries alone.
var epoch = time.Unix(0, 0)

// write writes the layer as a tar stream, its entries in lexical order of their paths (so
// a directory comes before what it holds).
func (l Layer) write(w io.Writer) error {
	entries := slices.Clone(l)
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	tw := tar.NewWriter(w)
	for i, e := range entries {
		if e.Path == "" || e.Path != path.Clean(e.Path) || path.IsAbs(e.Path) || e.Path == ".." || strings.HasPrefix(e.Path, "../") {
			return fmt.Errorf("entry %q: want a clean path relative to the image's root", e.Path)
		}
		if i > 0 && entries[i-1].Path == e.Path {
			return fmt.Errorf("entry %q: given twice", e.Path)
		}
		if err := e.write(tw); err != nil {
			return fmt.Errorf("entry %s: %w", e.Path, err)
		}
	}
	return tw.Close()
}

func (e Entry) write(tw *tar.Writer) error {
	hdr := &tar.Header{
		Name:    e.Path,
		Mode:    tarMode(e.Mode),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	var body io.Reader
	switch e.Mode.Type() {
	case fs.ModeDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
	case fs.ModeSymlink:
		if e.Link == "" {
			return errors.New("a symbolic link without a target")
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
	case 0:
		hdr.Typeflag = tar.TypeReg
		if e.Source == "" {
			hdr.Size, body = int64(len(e.Data)), bytes.NewReader(e.Data)
			break
		}
		f, err := os.Open(e.Source)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", e.Source)
		}
		hdr.Size, body = info.Size(), f
	default:
		return fmt.Errorf("mode %v is neither a file, a directory nor a symbolic link", e.Mode)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	n, err := io.Copy(tw, body)
	if err == nil && n != hdr.Size {
		err = errors.New("changed while being read")
	}
	return err
}
