"""mp4 videos written frame by frame, with a caption strip under the screen.

Frames go straight to an ffmpeg process (imageio-ffmpeg's own binary; no system ffmpeg is
needed) through a pipe, so memory stays flat however long the video: nothing holds an episode.
The video is written to a hidden temporary file beside its path and renamed when finished, so a
crash or an error never leaves a half-written video under the name asked for.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from shoal.config import storage_error
from shoal.errors import ConfigError, ShoalError, StorageError

__all__ = ["VideoWriter", "check_video_path", "make_folder", "mp4_to_gif"]

_TEXT = (255, 255, 255)


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
    """

    def __init__(self, path: str | os.PathLike[str], fps: float, lossless: bool = False) -> None:
        self.path = Path(path)
        self.fps = float(fps)
        self.lossless = lossless
        self.frames = 0
        self.size: tuple[int, int] | None = None  # (width, height) of the video's frames
        self._ffmpeg = _ffmpeg()
        self._writer: Any = None
        self._tmp: Path | None = None
        self._screen_shape: tuple[int, ...] | None = None
        self._frame: np.ndarray | None = None
        self._caption: _Caption | None = None

    def add(self, screen: np.ndarray, caption: str = "") -> None:
        """Append one frame: `screen` with `caption` drawn in a strip beneath it."""
        if self._writer is None:
            self._open(screen.shape)
        elif screen.shape != self._screen_shape:
            raise ShoalError(
                f"The environment's screen changed size from {self._screen_shape} to "
                f"{screen.shape} during the video; a video needs frames of one size."
            )
        assert self._frame is not None and self._caption is not None
        height, width = screen.shape[:2]
        self._frame[:height, :width] = screen
        self._frame[height : height + self._caption.height] = self._caption.strip(caption)
        self._send(self._frame)
        self.frames += 1

    def close(self) -> None:
        """Finish the video and move it to `path` (a video with no frame writes nothing)."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.close()
        except Exception as err:
            self._discard()
            raise self._failed(err) from None
        assert self._tmp is not None
        try:
            os.replace(self._tmp, self.path)
        except OSError as err:
            self._discard()
            raise storage_error(self.path, err) from None

    def discard(self) -> None:
        """Stop and remove the partial video."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            with contextlib.suppress(Exception):  # the file is removed anyway
                writer.close()
        self._discard()

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
        self._frame = np.zeros((total + total % 2, width + width % 2, 3), np.uint8)
        self.size = (self._frame.shape[1], self._frame.shape[0])
        # ffmpeg creates the file, so it gets the permissions of any new file (mkstemp's are
        # private to the user).
        self._tmp = self.path.with_name(f".{self.path.stem}.{uuid.uuid4().hex[:8]}.partial.mp4")
        if self.lossless:
            codec = {"codec": "libx264rgb", "pix_fmt_out": "rgb24", "output_params": ["-qp", "0"]}
        else:
            # crf 20: sharp pixel art. ultrafast and one thread: the least CPU taken from the
            # agent (ffmpeg's 0.30 ms per Atari frame, against 0.42 with its own threads and 0.49
            # for veryfast), for files twice as large as veryfast's (115 kB a game of Pong).
            options = ["-crf", "20", "-preset", "ultrafast", "-threads", "1"]
            codec = {"codec": "libx264", "output_params": options}
        self._writer = self._ffmpeg.write_frames(
            str(self._tmp),
            self.size,
            fps=self.fps,
            quality=None,
            macro_block_size=2,
            ffmpeg_log_level="error",
            **codec,
        )
        self._send(None)  # starts ffmpeg

    def _send(self, frame: np.ndarray | None) -> None:
        try:
            self._writer.send(frame)
        except Exception as err:
            self.discard()
            raise self._failed(err) from None

    def _failed(self, err: Exception) -> StorageError:
        if isinstance(err, OSError) and err.errno is not None:
            return storage_error(self.path, err)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return StorageError(
            f"Cannot write {self.path}: ffmpeg stopped ({first}). Check that the folder has room "
            "and can be written."
        )

    def _discard(self) -> None:
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None


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
