"""mp4 videos written frame by frame, with a caption strip under the screen.

Frames go to an ffmpeg process (imageio-ffmpeg's own binary; no system ffmpeg is needed)
straight down a pipe, so memory stays flat however long the video: nothing holds an episode.
The video is written to a hidden temporary file beside its path and renamed when finished, so a
crash or an error never leaves a half-written video under the name asked for.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
import uuid
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from shoal.config import storage_error
from shoal.errors import ConfigError, ShoalError, StorageError

try:
    import fcntl
except ImportError:  # Windows: pipes keep their size
    fcntl = None  # type: ignore[assignment]

__all__ = ["VideoWriter", "check_video_path", "make_folder", "mp4_to_gif"]

_TEXT = (255, 255, 255)
PIPE_BYTES = 2**20  # about 10 Atari frames on their way to ffmpeg


def _ffmpeg() -> Any:
    try:
        import imageio_ffmpeg
    except ImportError:
        raise ConfigError(
            "Writing videos needs imageio-ffmpeg (it ships its own ffmpeg): "
            "pip install imageio-ffmpeg."
        ) from None
    return imageio_ffmpeg


def make_folder(folder: Path) -> None:
    """A folder for videos (a full disk or a read-only run directory: a StorageError)."""
    try:
        folder.mkdir(exist_ok=True)
    except OSError as err:
        raise storage_error(folder, err) from None


def check_video_path(path: Path) -> None:
    """A video path a user gave: an .mp4 in a folder that exists."""
    if path.is_dir():
        raise ConfigError(f"--video {path} is a folder; give the path of an .mp4 file in it.")
    if path.suffix.lower() != ".mp4":
        raise ConfigError(f"--video {path}: videos are written as mp4; name it e.g. out.mp4.")
    if not path.parent.is_dir():
        raise ConfigError(
            f"--video {path}: the folder {path.parent} does not exist; create it or choose "
            "another path."
        )
    if not os.access(path.parent, os.W_OK):  # a read-only filesystem refuses root as well
        raise StorageError(
            f"--video {path}: the folder {path.parent} cannot be written here (read-only, or "
            "not yours); choose a folder you can write to."
        )


class VideoWriter:
    """Write `[H, W, 3]` uint8 screens, each with a one-line caption below it, to an mp4.

    H.264 (yuv420p) by default, which every player shows; `lossless=True` stores the exact RGB
    values (libx264rgb, qp 0), for tests that compare frames. Use as a context manager: on an
    exception the partial file is removed and nothing appears at `path`.

    `add` hands the screen and its caption strip to the kernel in one `writev`, without
    copying them in Python, and returns; ffmpeg encodes in its own process, on another core
    when the machine has one free. The caller waits only when ffmpeg falls a full pipe (about
    a megabyte of frames) behind. A writing thread with a queue of frames, tried before, cost
    the agent twice as much: a copy per frame, and the thread taking the GIL from the agent
    for every frame (measured in benchmarks/video_overhead.py).
    """

    def __init__(self, path: str | os.PathLike[str], fps: float, lossless: bool = False) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.lossless = lossless
        self.frames = 0
        self.size: tuple[int, int] | None = None  # (width, height) of the video's frames
        self._exe = _ffmpeg().get_ffmpeg_exe()
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe = -1  # ffmpeg's standard input
        self._log: Any = None  # ffmpeg's stderr, a temporary file (a pipe could fill and block)
        self._tmp: Path | None = None
        self._screen_shape: tuple[int, ...] | None = None
        self._caption: _Caption | None = None
        self._padded: np.ndarray | None = None  # an odd-width screen, widened by a column
        self._bottom: np.ndarray | None = None  # a black row under an odd-height frame

    def add(self, screen: np.ndarray, caption: str = "") -> None:
        """Append one frame: `screen` with `caption` drawn in a strip beneath it."""
        if self._process is None:
            self._open(screen.shape)
        elif screen.shape != self._screen_shape:
            raise ShoalError(
                f"The environment's screen changed size from {self._screen_shape} to "
                f"{screen.shape} during the video; a video needs frames of one size."
            )
        assert self._caption is not None
        if self._padded is not None:
            self._padded[:, : screen.shape[1]] = screen
            screen = self._padded
        parts = [np.ascontiguousarray(screen), self._caption.strip(caption)]
        if self._bottom is not None:
            parts.append(self._bottom)
        try:
            _write_all(self._pipe, parts)
        except OSError as err:
            self._stop_failed(err)
        self.frames += 1

    def close(self) -> None:
        """Finish the video and move it to `path` (a video with no frame writes nothing)."""
        if self._process is None:
            return
        if self._finish() != 0:
            self._stop_failed(None)
        assert self._tmp is not None
        try:
            os.replace(self._tmp, self.path)
        except OSError as err:
            self.discard()
            raise storage_error(self.path, err) from None
        self._tmp = None
        self.discard()  # what is left: ffmpeg's log

    def discard(self) -> None:
        """Stop and remove the partial video."""
        if self._process is not None:
            with contextlib.suppress(OSError):  # it may have ended already
                self._process.kill()
            self._finish()
            self._process = None
        if self._tmp is not None:
            # A read-only filesystem refuses even to unlink a file that is not there.
            with contextlib.suppress(OSError):
                self._tmp.unlink(missing_ok=True)
            self._tmp = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    def _open(self, shape: tuple[int, ...]) -> None:
        height, width = shape[:2]
        self._screen_shape = tuple(shape)
        even_width = width + width % 2
        self._caption = _Caption(even_width)
        # H.264 in yuv420p needs even sides: pad by a black column/row rather than rescale.
        if width % 2:
            self._padded = np.zeros((height, even_width, 3), np.uint8)
        total = height + self._caption.height
        if total % 2:
            self._bottom = np.zeros((1, even_width, 3), np.uint8)
        self.size = (even_width, total + total % 2)
        # ffmpeg creates the file, so it gets the permissions of any new file (mkstemp's are
        # private to the user).
        self._tmp = self.path.with_name(f".{self.path.stem}.{uuid.uuid4().hex[:8]}.partial.mp4")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by `discard`)
        try:
            # Its own session: a Ctrl-C meant for shoal does not cut the video mid-file.
            self._process = subprocess.Popen(
                self._command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as err:
            self.discard()
            raise StorageError(f"Cannot write {self.path}: ffmpeg did not start ({err}).") from None
        assert self._process.stdin is not None
        self._pipe = self._process.stdin.fileno()
        _widen_pipe(self._pipe)

    def _command(self) -> list[str]:
        assert self.size is not None
        width, height = self.size
        fps = str(Fraction(self.fps).limit_denominator())
        source = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", fps]
        if self.lossless:
            codec = ["-c:v", "libx264rgb", "-pix_fmt", "rgb24", "-preset", "ultrafast", "-qp", "0"]
        else:
            # crf 20: sharp pixel art. ultrafast and one thread: the least CPU taken from the
            # agent, for files about twice as large as veryfast's (about 130 kB a game of Pong).
            codec = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast", "-crf", "20"]
        return [
            self._exe, "-nostdin", "-v", "error", "-y", *source, "-i", "-", "-an", *codec,
            "-threads", "1", str(self._tmp),
        ]  # fmt: skip

    def _finish(self) -> int | None:
        """Close ffmpeg's input and wait for ffmpeg to end the file; its exit code."""
        process = self._process
        assert process is not None and process.stdin is not None
        with contextlib.suppress(OSError):  # ffmpeg may have gone already
            process.stdin.close()
        return process.wait()

    def _stop_failed(self, error: OSError | None) -> NoReturn:
        """Raise what stopped ffmpeg (or the pipe to it), leaving no file behind."""
        if self._process is not None:
            self._finish()  # ffmpeg's last words are in its log once it has ended
        if error is not None and error.errno not in (None, errno.EPIPE):
            failure = storage_error(self.path, error)
        else:
            said = ""
            if self._log is not None:
                with contextlib.suppress(OSError):
                    self._log.seek(0)
                    said = self._log.read().decode(errors="replace").strip()
            if not said and error is not None:
                said = str(error).strip() or type(error).__name__
            first = said.splitlines()[0] if said else "no message"
            failure = StorageError(
                f"Cannot write {self.path}: ffmpeg stopped ({first}). Check that the folder has "
                "room and can be written."
            )
        self.discard()
        raise failure from None


def _write_all(fd: int, parts: list[np.ndarray]) -> None:
    """Write the arrays' bytes in order, in one system call unless the pipe takes them in
    pieces (a signal can cut a blocking write short)."""
    views = [memoryview(part).cast("B") for part in parts]
    written = os.writev(fd, views) if hasattr(os, "writev") else 0  # Windows has no writev
    for view in views:
        if written >= len(view):
            written -= len(view)
            continue
        rest = view[written:]
        written = 0
        while rest:
            rest = rest[os.write(fd, rest) :]


def _widen_pipe(fd: int) -> None:
    """A pipe as large as Linux allows a user (1 MB by default, not 64 kB): ffmpeg then reads
    several frames per wake-up, and a moment's delay in ffmpeg does not stop the agent. Elsewhere
    the pipe stays as it is."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setpipe is None:
        return
    try:
        size = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        fcntl.fcntl(fd, setpipe, min(size, PIPE_BYTES))
    except (OSError, ValueError):
        pass


class _Caption:
    """A black strip with one line of white text, `width` pixels wide.

    Text is built from glyphs drawn once each with Pillow's default font, so a caption that
    changes every frame (a return counting up) costs a few array copies, not a text layout."""

    def __init__(self, width: int) -> None:
        from PIL import ImageFont

        self.size = max(10, width // 40)  # 10 px on Atari's 160, 15 px on CartPole's 600
        self.font = ImageFont.load_default(size=self.size)
        self.height = self.size + 4
        self.width = width
        self._glyphs: dict[str, np.ndarray] = {}
        self._text: str | None = None
        self._strip = np.zeros((self.height, width, 3), np.uint8)

    def strip(self, text: str) -> np.ndarray:
        if text != self._text:
            self._text = text
            self._strip[:] = 0
            x = self.size // 3
            for char in text:
                glyph = self._glyph(char)
                right = min(x + glyph.shape[1], self.width)
                self._strip[:, x:right] = glyph[:, : right - x]
                x = right
        return self._strip

    def _glyph(self, char: str) -> np.ndarray:
        glyph = self._glyphs.get(char)
        if glyph is None:
            from PIL import Image, ImageDraw

            width = max(1, round(self.font.getlength(char)))
            image = Image.new("L", (width, self.height))
            ImageDraw.Draw(image).text((0, 1), char, font=self.font, fill=255)
            alpha = np.asarray(image, np.float32)[..., None] / 255.0
            glyph = (alpha * np.array(_TEXT, np.float32)).astype(np.uint8)
            self._glyphs[char] = glyph
        return glyph


def mp4_to_gif(video: Path, gif: Path, max_seconds: float, width: int = 320) -> None:
    """The first `max_seconds` of `video` as an animated GIF at most `width` pixels wide (what
    TensorBoard's image dashboard plays), converted by ffmpeg without loading the video."""
    command = [
        _ffmpeg().get_ffmpeg_exe(),
        "-v",
        "error",
        "-y",
        "-t",
        str(max_seconds),
        "-i",
        str(video),
        "-vf",
        f"scale='min({width},iw)':-2:flags=neighbor",
        "-loop",
        "0",
        str(gif),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StorageError(f"Cannot write {gif}: ffmpeg said {result.stderr.strip()[:300]}")
