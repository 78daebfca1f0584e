"""mp4 videos written frame by frame, with a caption strip under the screen.

Frames go to an ffmpeg process (imageio-ffmpeg's own binary; no system ffmpeg is needed)
through a bounded queue and a pipe, so memory stays flat however long the video: nothing holds
an episode, and the caller does not wait on the encoder unless it falls a queue behind.
The video is written to a hidden temporary file beside its path and renamed when finished, so a
crash or an error never leaves a half-written video under the name asked for.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import subprocess
import tempfile
import threading
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
QUEUE_BYTES = 8 * 2**20  # of frames waiting for ffmpeg, at most (and at most MAX_QUEUED_FRAMES)
MAX_QUEUED_FRAMES = 32  # 2 s of Atari at 15 fps
PIPE_BYTES = 2**20


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


class VideoWriter:
    """Write `[H, W, 3]` uint8 screens, each with a one-line caption below it, to an mp4.

    H.264 (yuv420p) by default, which every player shows; `lossless=True` stores the exact RGB
    values (libx264rgb, qp 0), for tests that compare frames. Use as a context manager: on an
    exception the partial file is removed and nothing appears at `path`.

    `add` copies the frame into one of a few buffers and returns; a thread of this process
    hands the buffers to ffmpeg, which encodes in its own process. So the caller never waits
    on ffmpeg unless ffmpeg falls `queued_frames` behind (at most `QUEUE_BYTES` of frames):
    the agent plays on while ffmpeg encodes, on another core when the machine has one free,
    and memory stays bounded whatever the length of the video.
    """

    def __init__(self, path: str | os.PathLike[str], fps: float, lossless: bool = False) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.lossless = lossless
        self.frames = 0
        self.size: tuple[int, int] | None = None  # (width, height) of the video's frames
        self.queued_frames = 0  # buffers between `add` and ffmpeg, set by the first frame
        self._exe = _ffmpeg().get_ffmpeg_exe()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None  # ffmpeg's stderr, a temporary file (a pipe could fill and block)
        self._thread: threading.Thread | None = None
        self._free: queue.SimpleQueue[_Buffer] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[_Buffer | None] = queue.SimpleQueue()
        self._error: BaseException | None = None  # of the writing thread
        self._tmp: Path | None = None
        self._screen_shape: tuple[int, ...] | None = None
        self._caption: _Caption | None = None

    def add(self, screen: np.ndarray, caption: str = "") -> None:
        """Append one frame: `screen` with `caption` drawn in a strip beneath it."""
        if self._process is None:
            self._open(screen.shape)
        elif screen.shape != self._screen_shape:
            raise ShoalError(
                f"The environment's screen changed size from {self._screen_shape} to "
                f"{screen.shape} during the video; a video needs frames of one size."
            )
        if self._error is not None:
            self._stop_failed()
        assert self._caption is not None
        buffer = self._free.get()  # waits only while ffmpeg is `queued_frames` behind
        height, width = screen.shape[:2]
        buffer.frame[:height, :width] = screen
        if buffer.caption != caption:  # the return changes far less often than the screen
            buffer.frame[height : height + self._caption.height] = self._caption.strip(caption)
            buffer.caption = caption
        self._full.put(buffer)
        self.frames += 1

    def close(self) -> None:
        """Finish the video and move it to `path` (a video with no frame writes nothing)."""
        if self._process is None:
            return
        returncode = self._finish()
        if self._error is not None or returncode != 0:
            self._stop_failed()
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
        self._caption = _Caption(width + width % 2)
        # H.264 in yuv420p needs even sides: pad by a black column/row rather than rescale.
        total = height + self._caption.height
        frame_shape = (total + total % 2, width + width % 2, 3)
        self.size = (frame_shape[1], frame_shape[0])
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
        _widen_pipe(self._process.stdin.fileno())
        frame_bytes = int(np.prod(frame_shape))
        self.queued_frames = max(2, min(MAX_QUEUED_FRAMES, QUEUE_BYTES // frame_bytes))
        for _ in range(self.queued_frames):
            self._free.put(_Buffer(np.zeros(frame_shape, np.uint8)))
        self._thread = threading.Thread(target=self._write, name="shoal-video", daemon=True)
        self._thread.start()

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

    def _write(self) -> None:
        """The writing thread: each full buffer down ffmpeg's pipe, then back to the free ones.

        After a failure it only recycles buffers, so `add` never waits on a dead ffmpeg."""
        assert self._process is not None and self._process.stdin is not None
        pipe = self._process.stdin.fileno()
        while (buffer := self._full.get()) is not None:
            if self._error is None:
                try:
                    _write_all(pipe, buffer.view)
                except BaseException as err:  # handed to the caller's thread by `add` and `close`
                    self._error = err
            self._free.put(buffer)

    def _finish(self) -> int | None:
        """Let the writing thread send every frame and stop, close ffmpeg's input and wait for
        ffmpeg to end the file; its exit code."""
        process = self._process
        assert process is not None and process.stdin is not None
        if self._thread is not None:
            self._full.put(None)
            self._thread.join()
            self._thread = None
        with contextlib.suppress(OSError):  # ffmpeg may have gone already
            process.stdin.close()
        return process.wait()

    def _stop_failed(self) -> NoReturn:
        """Raise what stopped ffmpeg (or the pipe to it), leaving no file behind."""
        error = self._error
        if self._process is not None:
            self._finish()  # ffmpeg's last words are in its log once it has ended
        if isinstance(error, OSError) and error.errno not in (None, errno.EPIPE):
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


class _Buffer:
    """One frame on its way to ffmpeg, and the caption its strip shows."""

    def __init__(self, frame: np.ndarray) -> None:
        self.frame = frame
        self.view = memoryview(frame).cast("B")  # written without a copy to bytes
        self.caption: str | None = None


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _widen_pipe(fd: int) -> None:
    """A pipe as large as Linux allows a user (1 MB by default, not 64 kB): ffmpeg then reads
    several frames per wake-up. Elsewhere the pipe stays as it is."""
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
