# fs_note.sh - sourced by benchmarks that create many files
#
# fs_note DIR: a line saying so when DIR is on ext4 without a journal.
# There, allocating an inode skips every inode of its group freed in the
# last 60 s (360 s while its inode table block is not yet written back),
# reading each one's table block to learn that (the kernel's
# recently_deleted), so every file a run creates costs more the more files
# were deleted just before, by the run itself or by the previous run's
# clean-up: back-to-back runs of bench_batch.sh took 2-4x the CPU of one
# after six quiet minutes (doc/benchmarks.md, session 14).
fs_note() {
	_dev=$(df -P "$1" 2>/dev/null | awk 'NR == 2 {print $1}')
	_jt=/sys/fs/ext4/${_dev##*/}/journal_task
	[ -r "$_jt" ] && [ "$(cat "$_jt")" = "<none>" ] || return 0
	echo "# note: $1 is on ext4 without a journal: inodes freed in the last 60-360 s" \
	    "(a previous run's clean-up too) make each new file dearer; wait 6 min" \
	    "between runs, or TMPDIR=/dev/shm"
}
