package terminal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// writeTimeout bounds one write to the terminal. A program that stops reading its input fills
// the terminal's input queue, and a write would then block for ever.
const writeTimeout = 5 * time.Second

// maxMarkerFields bounds the text between a prompt's start and end tokens. Anything longer is
// not our prompt (a program printed the start token) and is passed on as output.
const maxMarkerFields = 8 << 10

// prompt is what bash reported when it printed its prompt, that is when the previous command
// line finished.
type prompt struct {
	exitCode int
	pid      int
	user     string
	host     string
	python   string
	cwd      string
}

// finished is a command whose prompt came back: its last output, how many bytes of that the
// buffer dropped, and the prompt.
type finished struct {
	out     []byte
	dropped int64
	prompt  prompt
}

// shell is one bash process on a pty. Bash runs interactively so that it prints its prompt,
// PS1, exactly when it is ready for the next command line; PS1 is set to a marker carrying
// the exit status, the working directory and a few facts, framed by tokens holding a random
// nonce. A reader goroutine splits the terminal's output into command output and prompts.
//
// Bash gets a process group of its own but stays in the runtime's session: sandbox backends
// find a sandbox's processes by session, to pause or kill them. The terminal is therefore not
// bash's controlling terminal, which has two consequences. Bash runs without job control, so
// every command it starts stays in its process group and killing that group ends them all.
// And the terminal driver does not turn ^C into a signal, so sendKey does it.
type shell struct {
	cmd   *exec.Cmd
	ptmx  *os.File
	pid   int
	start []byte // marker tokens as bash prints them
	end   []byte

	exited   chan struct{} // closed once bash has been reaped
	status   int           // bash's exit status, set before exited closes
	readDone chan struct{} // closed when the reader stops

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever the fields below change
	pending []byte        // output not yet classified; may end in part of a marker
	out     capBuffer     // output of the running command not yet handed out
	busy    bool          // a command line was sent and its prompt has not come back
	final   *finished     // the busy command's end, once its prompt came back
	last    prompt        // the latest prompt
	lastOut time.Time     // when output last arrived (or a command was sent)

	// env are the variables set on top of the environment (see Session.SetEnv); only the Run
	// in progress touches it.
	env map[string]string
}

// startShell starts bash as opts say and waits for its first prompt.
func startShell(ctx context.Context, opts Options) (*shell, error) {
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	ptmx, tty, err := openPTY()
	if err != nil {
		return nil, err
	}
	defer tty.Close()

	cmd := exec.Command(opts.Bash, "--noprofile", "--norc", "--noediting", "+m", "-i")
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: opts.Credential}
	if err := cmd.Start(); err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("start bash: %w", err)
	}
	sh := &shell{
		cmd:      cmd,
		ptmx:     ptmx,
		pid:      cmd.Process.Pid,
		start:    []byte("__AGENTD_PS1_" + nonce + "__"),
		end:      []byte("__AGENTD_END_" + nonce + "__"),
		exited:   make(chan struct{}),
		readDone: make(chan struct{}),
		changed:  make(chan struct{}),
		out:      capBuffer{limit: opts.MaxBufferedOutput},
		busy:     true, // until the prompt the setup line brings
		lastOut:  time.Now(),
	}
	go sh.wait()
	go sh.read()

	// The nonce lives in a shell variable that is not exported, and PS1 names the variable,
	// so neither printing PS1 nor a child shell can produce a marker by accident. The prompt
	// starts no process: the Python interpreter is looked up along PATH by bash itself, in
	// PROMPT_COMMAND, not in a command substitution. A process of the prompt's own would be
	// in the process group when an interrupt is sent again (see interrupt), taking a signal
	// bash would then act on while it reads the next command line.
	setup := "__agentd_n=" + nonce + "; " +
		`__agentd_python() { local d p dirs; IFS=: read -ra dirs <<< "$PATH"; __agentd_py=; ` +
		`for p in python3 python; do for d in "${dirs[@]}"; do ` +
		`if [[ -x ${d:-.}/$p && ! -d ${d:-.}/$p ]]; then __agentd_py=${d:-.}/$p; return; fi; done; done; }; ` +
		`PROMPT_COMMAND=__agentd_python; ` +
		`PS1='__AGENTD_PS1_${__agentd_n}__$?\037$$\037\u\037\h\037${__agentd_py}\037${PWD}__AGENTD_END_${__agentd_n}__'; ` +
		"PS2=''; PS0=''; unset HISTFILE; set +H\n"
	if err := sh.write([]byte(setup)); err != nil {
		sh.kill()
		return nil, fmt.Errorf("set up bash: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for {
		sh.mu.Lock()
		fin, ch := sh.final, sh.changed
		sh.mu.Unlock()
		if fin != nil {
			sh.mu.Lock()
			sh.final = nil // the banner and warnings bash printed before the setup line
			sh.mu.Unlock()
			return sh, nil
		}
		select {
		case <-ch:
		case <-sh.exited:
			sh.kill()
			return nil, fmt.Errorf("bash exited with status %d before its first prompt", sh.status)
		case <-wctx.Done():
			sh.kill()
			return nil, fmt.Errorf("bash gave no prompt: %w", wctx.Err())
		}
	}
}

// openPTY opens a terminal pair with echo off, so the commands written to it do not come back
// as output. The master is reopened in non-blocking mode: pty.Open hands it out blocking, and
// only a non-blocking file has write deadlines and a Close that stops a pending Read.
func openPTY() (ptmx, tty *os.File, err error) {
	p, t, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer p.Close()
	if err := pty.Setsize(t, &pty.Winsize{Rows: 200, Cols: 256}); err != nil {
		t.Close()
		return nil, nil, fmt.Errorf("size pty: %w", err)
	}
	tfd := int(t.Fd())
	tio, err := unix.IoctlGetTermios(tfd, ioctlGetTermios)
	if err == nil {
		tio.Lflag &^= unix.ECHO | unix.ECHONL
		err = unix.IoctlSetTermios(tfd, ioctlSetTermios, tio)
	}
	if err != nil {
		t.Close()
		return nil, nil, fmt.Errorf("set pty mode: %w", err)
	}
	fd, err := unix.Dup(int(p.Fd()))
	if err != nil {
		t.Close()
		return nil, nil, fmt.Errorf("dup pty: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		t.Close()
		return nil, nil, fmt.Errorf("pty non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), t, nil
}

func newNonce() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// wait reaps bash once it exits, first killing what is left of its process group: the
// session is over, and nothing else would stop its background jobs.
func (sh *shell) wait() {
	waitExited(sh.pid)
	_ = syscall.Kill(-sh.pid, syscall.SIGKILL)
	err := sh.cmd.Wait()
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		}
	}
	sh.mu.Lock()
	sh.status = status
	close(sh.exited)
	sh.notifyLocked()
	sh.mu.Unlock()
}

// read copies the terminal's output into the shell's state until the terminal is closed.
func (sh *shell) read() {
	defer close(sh.readDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := sh.ptmx.Read(buf)
		if n > 0 {
			sh.feed(buf[:n])
		}
		if err != nil {
			// EIO once every holder of the terminal's other side has gone; ErrClosed on kill.
			return
		}
	}
}

// feed classifies new terminal output: text before a marker is output, a marker is a prompt.
func (sh *shell) feed(p []byte) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.pending = append(sh.pending, p...)
	for {
		i := bytes.Index(sh.pending, sh.start)
		if i < 0 {
			keep := partialSuffix(sh.pending, sh.start)
			sh.emitLocked(sh.pending[:len(sh.pending)-keep])
			sh.pending = append(sh.pending[:0], sh.pending[len(sh.pending)-keep:]...)
			break
		}
		sh.emitLocked(sh.pending[:i])
		rest := sh.pending[i+len(sh.start):]
		j := bytes.Index(rest, sh.end)
		if j < 0 {
			if len(rest) > maxMarkerFields {
				sh.emitLocked(sh.pending[i : i+len(sh.start)])
				sh.pending = append(sh.pending[:0], rest...)
				continue
			}
			sh.pending = append(sh.pending[:0], sh.pending[i:]...)
			break
		}
		fields := rest[:j]
		after := rest[j+len(sh.end):]
		if pr, ok := parsePrompt(fields); ok {
			sh.promptLocked(pr)
		} else {
			sh.emitLocked(sh.pending[i : i+len(sh.start)+j+len(sh.end)])
		}
		sh.pending = append(sh.pending[:0], after...)
	}
	sh.notifyLocked()
}

func (sh *shell) emitLocked(b []byte) {
	if len(b) == 0 {
		return
	}
	sh.out.Write(b)
	sh.lastOut = time.Now()
}

func (sh *shell) promptLocked(pr prompt) {
	if sh.busy {
		out, dropped := sh.out.Take()
		sh.final = &finished{out: out, dropped: dropped, prompt: pr}
		sh.busy = false
	} else {
		// Output between prompts with no command running: background jobs, or a stray line.
		sh.out.Reset()
	}
	sh.last = pr
}

func (sh *shell) notifyLocked() {
	close(sh.changed)
	sh.changed = make(chan struct{})
}

// parsePrompt reads the fields of a marker: exit status, pid, user, host, python, cwd,
// separated by US (0x1f). The cwd comes last so that it may hold anything but the end token.
func parsePrompt(b []byte) (prompt, bool) {
	f := bytes.SplitN(b, []byte{0x1f}, 6)
	if len(f) != 6 {
		return prompt{}, false
	}
	code, err1 := strconv.Atoi(string(f[0]))
	pid, err2 := strconv.Atoi(string(f[1]))
	if err1 != nil || err2 != nil {
		return prompt{}, false
	}
	return prompt{exitCode: code, pid: pid, user: string(f[2]), host: string(f[3]),
		python: string(f[4]), cwd: string(f[5])}, true
}

// partialSuffix returns the length of the longest suffix of b that is a proper prefix of tok.
func partialSuffix(b, tok []byte) int {
	for n := min(len(tok)-1, len(b)); n > 0; n-- {
		if bytes.HasSuffix(b, tok[:n]) {
			return n
		}
	}
	return 0
}

// begin marks a command line as sent: output from now on is its output, and the next prompt
// ends it. It must be called before the line is written, or a fast prompt could be missed.
func (sh *shell) begin() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.out.Reset()
	sh.busy = true
	sh.final = nil
	sh.lastOut = time.Now()
}

// touch restarts the no-change clock, when input is sent to a running command.
func (sh *shell) touch() {
	sh.mu.Lock()
	sh.lastOut = time.Now()
	sh.mu.Unlock()
}

// write sends b to the terminal's input.
func (sh *shell) write(b []byte) error {
	if err := sh.ptmx.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := sh.ptmx.Write(b)
	return err
}

// signalKey turns an interrupt, quit or suspend character into what the terminal driver
// would do were it bash's controlling terminal: it reports the signal for the character if
// the program reading the terminal left signal generation on (ISIG), and 0 otherwise (for
// example under an editor in raw mode, which wants the byte itself).
func (sh *shell) signalKey(c byte) syscall.Signal {
	var tio *unix.Termios
	rc, err := sh.ptmx.SyscallConn()
	if err != nil {
		return 0
	}
	cerr := rc.Control(func(fd uintptr) {
		// On a pty master, the terminal modes asked for are those of the other side.
		tio, err = unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	})
	if cerr != nil || err != nil || tio.Lflag&unix.ISIG == 0 {
		return 0
	}
	switch c {
	case tio.Cc[unix.VINTR]:
		return syscall.SIGINT
	case tio.Cc[unix.VQUIT]:
		return syscall.SIGQUIT
	case tio.Cc[unix.VSUSP]:
		return syscall.SIGTSTP
	}
	return 0
}

// signal sends sig to bash's process group: bash and every command it runs.
func (sh *shell) signal(sig syscall.Signal) error {
	return syscall.Kill(-sh.pid, sig)
}

// snapshot returns the running command's state: whether it is still running, its end if it
// finished, and the output it printed since the last take.
func (sh *shell) snapshot() (busy bool, fin *finished, changed <-chan struct{}, lastOut time.Time) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.busy, sh.final, sh.changed, sh.lastOut
}

// takeFinal hands out the finished command's end once.
func (sh *shell) takeFinal() *finished {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	f := sh.final
	sh.final = nil
	return f
}

// takeOutput hands out the output printed since the last take, and how many bytes of it the
// buffer dropped.
func (sh *shell) takeOutput() ([]byte, int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.out.Take()
}

// state reports whether a command line is running, and whether one finished whose end has not
// been handed out.
func (sh *shell) state() (busy, unreported bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.busy, sh.final != nil
}

func (sh *shell) lastPrompt() prompt {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.last
}

// hasExited reports whether bash is gone.
func (sh *shell) hasExited() bool {
	select {
	case <-sh.exited:
		return true
	default:
		return false
	}
}

// kill ends bash and everything in its process group, reaps bash, closes the terminal and
// waits for the reader. It is safe to call more than once.
func (sh *shell) kill() {
	if !sh.hasExited() {
		_ = syscall.Kill(-sh.pid, syscall.SIGKILL)
	}
	<-sh.exited
	// A process that left the group may still hold the terminal; closing our side stops the
	// reader whatever it does.
	_ = sh.ptmx.Close()
	<-sh.readDone
}
