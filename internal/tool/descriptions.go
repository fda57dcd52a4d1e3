package tool

// The descriptions are the model's manual for each tool: what it is for, how one call behaves,
// and the mistakes to avoid. They are agentd's own text.

const terminalDescription = `Run a bash command in a persistent shell session on a terminal.

The session lives for the whole conversation: the working directory, exported variables, shell functions and activated virtualenvs carry over from one call to the next. Output is plain text (colours and cursor movements are removed).

How to call it:
* One command per call. To run several steps, chain them on one line with && or ; (or write a script file and run it). A command may span lines only as a single construct (a heredoc, an if/for/while block, a line ending in \ or |).
* Long-running commands: the call returns once the command has printed nothing new for about 30 seconds, and at the latest after a few minutes even while it keeps printing, with exit code -1 and a note that it is still running. Then, in the next call, either send an empty command to wait for more output, send input with is_input=true, or interrupt it with is_input=true and command C-c. Set timeout (seconds) to wait a fixed time instead (within that same upper bound). While a command runs, a new command is refused until it ends or is interrupted.
* Servers and other processes that never end: start them in the background with their output redirected, e.g. "python app.py > server.log 2>&1 &", then read the log.
* Interactive programs: answer prompts with is_input=true and the text (a newline is added), or a key: C-c (interrupt), C-d (end of input), C-<letter>, UP, DOWN, LEFT, RIGHT, HOME, END, PGUP, PGDN, TAB, ESC, BS, ENTER. Prefer non-interactive flags (apt-get -y, git --no-pager, npm init -y) where they exist.
* Do not use "set -e" or "exit": a shell that exits loses the session's state.
* Long output is cut in the middle; the note that says so names a file holding the output, which you can read in parts with sed -n or search with grep. Of a very long output only the start and the end are kept: redirect it to a file (cmd > out.log 2>&1) when you need all of it.
* reset=true kills the shell and everything it started and opens a fresh session; use it when the terminal is stuck.
* Prefer the file_editor tool for viewing and editing files, and the glob and grep tools for finding them.`

const fileEditorDescription = `View, create and edit plain-text files.

Commands:
* view: a file is shown with line numbers (as cat -n does); view_range [start, end] limits it to those lines, [start, -1] reads to the end. A directory is listed two levels deep, hidden entries left out. Long output is cut; then view a range or search with grep.
* create: write a new file with file_text. Refuses to overwrite an existing file: edit it with str_replace instead. Missing parent directories are created.
* str_replace: replace old_str with new_str. old_str must match the file exactly, whitespace and indentation included, and occur exactly once; include three to five lines of context around the change to make it unique. new_str must differ from old_str; an empty new_str deletes old_str.
* insert: insert new_str after line insert_line (0 puts it at the top of the file).
* undo_edit: revert the last create, str_replace or insert on path (up to five steps back).

Rules:
* path is always an absolute path, such as /workspace/project/src/main.py.
* Edits show a numbered snippet of the changed region: check indentation and that nothing was duplicated.
* When making several changes to one file, make them in order from top to bottom and check each result.
* Files over 10 MB and binary files cannot be viewed or edited here; use the terminal.`

const globDescription = `Find files whose paths match a glob pattern.

* pattern is matched against each file's path relative to path: * and ? match within one directory, ** matches any number of directories, {a,b} matches either. Examples: "**/*.go", "src/**/test_*.py", "*.{json,yaml}".
* path is the absolute directory to search; it defaults to the workspace.
* Returns at most 100 files, most recently modified first.
* Hidden directories (such as .git) and node_modules are not searched unless the pattern names them or path is inside them.
* To search file contents, use grep.`

const grepDescription = `Search file contents with a regular expression.

* pattern is a regular expression in RE2 syntax (as in Go and ripgrep; no backreferences or lookaround), matched line by line. Use (?i) for a case-insensitive search and escape regex characters (\., \(, \[) to match them literally.
* path is the absolute directory or file to search; it defaults to the workspace.
* include keeps only files whose name matches a glob, e.g. "*.py" or "*.{ts,tsx}".
* Returns at most 100 files with matches, most recently modified first, each with the numbers and text of its first matching lines.
* Binary files, files over 10 MB, hidden directories (such as .git) and node_modules are skipped.
* To find files by name, use glob.`

const taskTrackerDescription = `Keep a task list for work that takes several steps, so that nothing is forgotten and progress is visible.

* view shows the current list.
* plan replaces the whole list with task_list: always send every task, including those already done, in order.
* Each task has a title, optional notes and a status: todo, in_progress or done.

Use it for work with three or more distinct steps, for several requests given at once, or when the user asks for it. Plan first, keep exactly one task in_progress while you work on it, and mark each task done as soon as it is finished, not in a batch at the end. Skip it for a single simple change or a question that needs no work.`

const thinkDescription = `Think something through without changing anything: plan an approach, weigh possible causes of a bug, or check your reasoning before acting. The thought is recorded for the user; nothing is run.`

const finishDescription = `Finish the task and hand back to the user. Call it once the work is done and checked, or when you cannot go further without the user's help. message is the final answer: what you did, what is left, and anything the user should verify.`
