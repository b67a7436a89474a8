"""The sources of the text corpora, each read from what an installed package ships.

Every reader returns :class:`Document` objects of at least :data:`MIN_CHARS` characters,
sorted by key, read without the network and without importing anything that runs code on
import beyond the packages named here:

* :func:`stdlib_docstrings` - module, class and function docstrings of the Python standard
  library, parsed from its source files with :mod:`ast` (nothing imported); PSF-2.0.
* :func:`pydoc_topics` - the help topics of :mod:`pydoc_data.topics`; PSF-2.0.
* :func:`stdlib_text_files` - the prose files of the standard library: IDLE's change logs
  (``NEWS.txt``, ``NEWS2x.txt``, ``HISTORY.txt``) cut into releases, its manual
  (``help.html``) cut into sections, its notes, ``email/architecture.rst`` and Python's
  ``LICENSE.txt``; PSF-2.0.
* :func:`api_docstrings` - docstrings of the public functions and classes of NumPy, SciPy
  and pandas (dependencies of this package); BSD-3-Clause.
* :func:`licence_texts` - the licence files in the ``.dist-info`` folders of this package's
  declared dependencies; each text is redistributable verbatim (most say so themselves).
* :func:`package_descriptions` - the long descriptions (``METADATA`` bodies) of the same
  dependencies, under each package's own (open) licence.
* :func:`sphinx_catalogs` - the translated messages of Sphinx's ``.po`` catalogs, one
  document per language (BSD-2-Clause); Sphinx is optional (numpydoc, of the dev extra,
  installs it).

Only this package's declared dependencies (:data:`DISTRIBUTIONS`) are read, never whatever
else happens to be installed, so two installs of the same versions build the same corpus.

Examples
--------
>>> from analysis.sources.corpora.text_sources import MIN_CHARS, pydoc_topics
>>> docs = pydoc_topics()
>>> docs[0].key, docs[0].genre, docs[0].licence, len(docs[0].text) >= MIN_CHARS
('pydoc-topic/assignment', 'language-reference', 'PSF-2.0', True)
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.metadata as md
import inspect
import platform
import sys
import sysconfig
from pathlib import Path

from analysis.validation import ParameterError

__all__ = [
    "API_MODULES",
    "DISTRIBUTIONS",
    "MIN_CHARS",
    "Document",
    "api_docstrings",
    "licence_texts",
    "package_descriptions",
    "pydoc_topics",
    "sphinx_catalogs",
    "stdlib_docstrings",
    "stdlib_text_files",
]

#: The shortest document kept: about 300 MiniLM tokens of English prose, so every document
#: holds an input of 256 tokens for the packaged text checkpoints (tests/sources/test_corpora).
MIN_CHARS = 1800

#: This package's declared runtime dependencies (pyproject.toml) whose licence files and
#: descriptions enter the corpus; nothing else installed is read.
DISTRIBUTIONS = (
    "jinja2",
    "matplotlib",
    "numpy",
    "pandas",
    "pillow",
    "pyarrow",
    "safetensors",
    "scikit-learn",
    "scipy",
    "seaborn",
    "statsmodels",
    "threadpoolctl",
    "torch",
    "tqdm",
    "transformers",
)

#: Modules whose public functions and classes give the API docstrings (NumPy, SciPy, pandas).
API_MODULES = (
    "numpy",
    "numpy.fft",
    "numpy.linalg",
    "numpy.ma",
    "numpy.random",
    "pandas",
    "scipy.integrate",
    "scipy.interpolate",
    "scipy.linalg",
    "scipy.ndimage",
    "scipy.optimize",
    "scipy.signal",
    "scipy.sparse",
    "scipy.spatial",
    "scipy.special",
    "scipy.stats",
)

#: Licence identifiers (substrings of a package's licence metadata) counted as open.
_OPEN = ("MIT", "BSD", "Apache", "PSF", "Python", "ISC", "MPL", "HPND", "Zlib", "CC0")

#: Standard-library folders that hold tests, demos or vendored wheels, not documentation.
_STDLIB_SKIP = ("test", "tests", "idle_test", "turtledemo", "_bundled", "site-packages")


@dataclasses.dataclass(frozen=True)
class Document:
    """One corpus document and where it came from.

    ``key`` is unique within a corpus (``"stdlib-doc/json"``); the corpus adds its name and a
    digest of ``text`` to form the input id (:meth:`TextCorpus.input_id
    <analysis.sources.corpora.text.TextCorpus.input_id>`).

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import Document
    >>> d = Document("x/y", "Some text.", "a test", "MIT", "test", "en", "none", "0")
    >>> d.sha256[:12]
    '13b4c5aecd1b'
    """

    key: str
    text: str
    source: str
    licence: str
    genre: str
    language: str
    distribution: str
    version: str

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the UTF-8 text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _clean(text: str) -> str:
    """Line endings normalised, trailing spaces and outer blank lines removed."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip()


def _python() -> tuple[str, str]:
    return "python", platform.python_version()


def stdlib_docstrings() -> list[Document]:
    """Docstrings of at least :data:`MIN_CHARS` characters of the standard library.

    Every ``.py`` file under the standard library folder (tests, demos and vendored folders
    left out) is parsed with :mod:`ast`; a module's, class's or function's docstring
    (:func:`ast.get_docstring`, indentation cleaned) is one document, keyed
    ``stdlib-doc/<module>[:<qualified name>]``.

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import stdlib_docstrings
    >>> docs = {d.key: d for d in stdlib_docstrings()}
    >>> "stdlib-doc/json" in docs, docs["stdlib-doc/json"].licence
    (True, 'PSF-2.0')
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    dist, version = _python()
    out = []
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root)
        if any(part in _STDLIB_SKIP or part.startswith("test_") for part in rel.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        for qualname, node in _documented(tree):
            doc = ast.get_docstring(node)
            if doc is None or len(doc) < MIN_CHARS:
                continue
            key = f"stdlib-doc/{module}" + (f":{qualname}" if qualname else "")
            what = f"{qualname} docstring" if qualname else "module docstring"
            out.append(
                Document(
                    key,
                    _clean(doc),
                    f"Python {version} standard library, {rel.as_posix()} ({what})",
                    "PSF-2.0",
                    "reference",
                    "en",
                    dist,
                    version,
                )
            )
    return sorted(out, key=lambda d: d.key)


def _documented(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of the module ("") and of its classes and functions."""
    found: list[tuple[str, ast.AST]] = [("", tree)]
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, kinds):
                name = f"{prefix}.{child.name}" if prefix else child.name
                found.append((name, child))
                stack.append((name, child))
    return found


def pydoc_topics() -> list[Document]:
    """The :mod:`pydoc_data.topics` help texts of at least :data:`MIN_CHARS` characters."""
    from pydoc_data.topics import topics

    dist, version = _python()
    return [
        Document(
            f"pydoc-topic/{name}",
            _clean(topics[name]),
            f"Python {version} pydoc_data.topics['{name}']",
            "PSF-2.0",
            "language-reference",
            "en",
            dist,
            version,
        )
        for name in sorted(topics)
        if len(topics[name].strip()) >= MIN_CHARS
    ]


#: Standard-library prose files: (path under the stdlib folder, genre, how it is cut).
_STDLIB_FILES = (
    ("LICENSE.txt", "licence", "whole"),
    ("email/architecture.rst", "manual", "paragraphs"),
    ("idlelib/HISTORY.txt", "changelog", "paragraphs"),
    ("idlelib/NEWS.txt", "changelog", "paragraphs"),
    ("idlelib/NEWS2x.txt", "changelog", "paragraphs"),
    ("idlelib/README.txt", "manual", "paragraphs"),
    ("idlelib/TODO.txt", "changelog", "paragraphs"),
    ("idlelib/extend.txt", "manual", "paragraphs"),
    ("idlelib/help.html", "manual", "paragraphs"),
)
#: Pieces of a long file are cut at blank lines once they reach this many characters.
_PIECE_CHARS = 3000


def _pieces(text: str) -> list[str]:
    r"""``text`` cut at blank lines into consecutive pieces of at least ``_PIECE_CHARS``
    characters (the last piece joins its predecessor when shorter than ``MIN_CHARS``).

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import _pieces
    >>> parts = _pieces("\n\n".join(["word " * 200] * 9))  # 9 paragraphs of 1000 chars
    >>> [len(p) // 1000 for p in parts]
    [3, 3, 3]
    """
    out, current = [], ""
    for para in text.split("\n\n"):
        current = f"{current}\n\n{para}" if current else para
        if len(current) >= _PIECE_CHARS:
            out.append(current.strip())
            current = ""
    if current.strip():
        if out and len(current.strip()) < MIN_CHARS:
            out[-1] = f"{out[-1]}\n\n{current.strip()}"
        else:
            out.append(current.strip())
    return out


def _html_text(html: str) -> str:
    """The text of an HTML page's body, a blank line after each block element."""
    from html.parser import HTMLParser

    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []
            self.skip = 0

        def handle_starttag(self, tag: str, attrs: object) -> None:
            self.skip += tag in ("script", "style", "head")

        def handle_endtag(self, tag: str) -> None:
            self.skip -= tag in ("script", "style", "head")
            if tag in ("p", "h1", "h2", "h3", "li", "dd", "pre", "div"):
                self.parts.append("\n\n")

        def handle_data(self, data: str) -> None:
            if not self.skip:
                self.parts.append(data)

    parser = _Text()
    parser.feed(html)
    paragraphs = ("".join(parser.parts)).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def stdlib_text_files() -> list[Document]:
    """The standard library's prose files (:data:`_STDLIB_FILES`), long ones cut in pieces.

    A file cut in pieces gives ``stdlib-file/<path>#<piece number>``, consecutive pieces
    that never overlap; a file missing from this Python's install is skipped.

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import stdlib_text_files
    >>> docs = stdlib_text_files()
    >>> sorted({d.genre for d in docs})
    ['changelog', 'licence', 'manual']
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    dist, version = _python()
    out = []
    for rel, genre, cut in _STDLIB_FILES:
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        text = _clean(_html_text(text) if rel.endswith(".html") else text)
        parts = [text] if cut == "whole" else _pieces(text)
        for i, part in enumerate(parts):
            if len(part) < MIN_CHARS:
                continue
            key = f"stdlib-file/{rel}" + (f"#{i}" if cut != "whole" else "")
            source = f"Python {version} standard library, {rel}" + (
                f" (piece {i} of {len(parts)})" if cut != "whole" else ""
            )
            out.append(Document(key, part, source, "PSF-2.0", genre, "en", dist, version))
    return sorted(out, key=lambda d: d.key)


def api_docstrings() -> list[Document]:
    """Docstrings of the public functions and classes of :data:`API_MODULES`.

    Names are read in sorted order and an object reached under two names keeps the first
    (``api-doc/<module>.<name>``); the licence is the distribution's (BSD-3-Clause).

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import api_docstrings
    >>> docs = {d.key: d for d in api_docstrings()}
    >>> docs["api-doc/numpy.linalg.svd"].distribution, docs["api-doc/numpy.linalg.svd"].genre
    ('numpy', 'api-reference')
    """
    out, seen = [], set()
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        dist = module_name.split(".")[0]
        version, licence = md.version(dist), _licence_of(dist)
        for name in sorted(vars(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if not (inspect.isroutine(obj) or inspect.isclass(obj)) or isinstance(obj, type(sys)):
                continue
            doc = obj.__doc__
            if not isinstance(doc, str) or id(obj) in seen:
                continue
            seen.add(id(obj))
            text = _clean(inspect.cleandoc(doc))
            if len(text) < MIN_CHARS:
                continue
            key = f"api-doc/{module_name}.{name}"
            source = f"{dist} {version}, docstring of {module_name}.{name}"
            out.append(Document(key, text, source, licence, "api-reference", "en", dist, version))
    return sorted(out, key=lambda d: d.key)


def _distribution(name: str) -> md.Distribution:
    try:
        return md.distribution(name)
    except md.PackageNotFoundError:
        raise ParameterError(
            "distribution", f"an installed dependency of this package ({name})", None
        ) from None


def _licence_of(name: str) -> str:
    """The distribution's licence: ``License-Expression``, else its licence classifier,
    else the first line of its ``License`` field."""
    meta = _distribution(name).metadata
    if meta.get("License-Expression"):
        return str(meta["License-Expression"])
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        return classifiers[0].split(" :: ")[-1]
    text = (meta.get("License") or "").strip()
    return text.splitlines()[0].strip() if text else "unknown"


def _is_open(licence: str) -> bool:
    return any(word.lower() in licence.lower() for word in _OPEN)


def licence_texts() -> list[Document]:
    """Licence files in the ``.dist-info`` folders of :data:`DISTRIBUTIONS`.

    A file counts when its name holds ``LICEN``, ``COPYING`` or ``NOTICE``; the key is
    ``licence/<distribution>/<path inside .dist-info>``. A licence text is copied verbatim,
    as every licence here permits; the document's ``licence`` names the distribution's.
    """
    out = []
    for name in DISTRIBUTIONS:
        dist = _distribution(name)
        version, licence = dist.version, _licence_of(name)
        for f in sorted(dist.files or [], key=str):
            path = str(f)
            inside = path.split(".dist-info/", 1)
            if len(inside) != 2 or not any(
                w in Path(path).name.upper() for w in ("LICEN", "COPYING", "NOTICE")
            ):
                continue
            try:
                text = _clean(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) < MIN_CHARS:
                continue
            out.append(
                Document(
                    f"licence/{name}/{inside[1]}",
                    text,
                    f"{name} {version}, {path}",
                    f"{licence} (licence text, copied verbatim)",
                    "licence",
                    "en",
                    name,
                    version,
                )
            )
    return sorted(out, key=lambda d: d.key)


def package_descriptions() -> list[Document]:
    """The ``METADATA`` long descriptions of :data:`DISTRIBUTIONS` under an open licence."""
    out = []
    for name in DISTRIBUTIONS:
        dist = _distribution(name)
        licence = _licence_of(name)
        text = _clean(dist.metadata.get_payload() or dist.metadata.get("Description") or "")
        if len(text) < MIN_CHARS or not _is_open(licence):
            continue
        out.append(
            Document(
                f"package-description/{name}",
                text,
                f"{name} {dist.version}, METADATA long description",
                licence,
                "package-description",
                "en",
                name,
                dist.version,
            )
        )
    return out


def sphinx_catalogs() -> list[Document]:
    """Sphinx's translated messages, one document per language (``ui-messages`` genre).

    The ``msgstr`` strings of ``sphinx/locale/<language>/LC_MESSAGES/sphinx.po`` in file
    order, one a line (placeholders kept); a language with under :data:`MIN_CHARS`
    characters of translation is left out.

    Raises
    ------
    ParameterError
        Naming ``corpus`` when Sphinx is not installed.
    """
    try:
        dist = md.distribution("sphinx")
    except md.PackageNotFoundError:
        raise ParameterError(
            "corpus",
            "an install with Sphinx for packaged-text-multilingual-v1 (the dev extra's "
            "numpydoc installs it; pip install sphinx)",
            "packaged-text-multilingual-v1",
        ) from None
    root = Path(str(dist.locate_file("sphinx"))) / "locale"
    licence = _licence_of("sphinx")
    out = []
    for po in sorted(root.glob("*/LC_MESSAGES/sphinx.po"), key=lambda p: p.parts[-3]):
        language = po.parts[-3].replace("_", "-")
        text = "\n".join(_po_messages(po.read_text(encoding="utf-8")))
        if len(text) < MIN_CHARS:
            continue
        out.append(
            Document(
                f"sphinx-catalog/{language}",
                text,
                f"sphinx {dist.version}, sphinx/locale/{po.parts[-3]}/LC_MESSAGES/sphinx.po",
                licence,
                "ui-messages",
                language,
                "sphinx",
                dist.version,
            )
        )
    return out


def _po_messages(po: str) -> list[str]:
    """The non-empty ``msgstr`` strings of a ``.po`` file, in file order.

    Examples
    --------
    >>> from analysis.sources.corpora.text_sources import _po_messages
    >>> _po_messages('msgid "a"\\nmsgstr ""\\n"Hallo "\\n"Welt"\\n\\nmsgid "b"\\nmsgstr ""\\n')
    ['Hallo Welt']
    """
    out, current = [], None
    for raw in po.splitlines():
        line = raw.strip()
        if line.startswith("msgstr"):
            current = [_unquote(line[line.index('"') :])] if '"' in line else []
            continue
        if line.startswith('"') and current is not None:
            current.append(_unquote(line))
            continue
        if current is not None:
            message = "".join(current).strip()
            if message:
                out.append(message)
            current = None
    if current and "".join(current).strip():
        out.append("".join(current).strip())
    return out[1:] if out and out[0].startswith(("Project-Id", "Language")) else out


def _unquote(s: str) -> str:
    body = s.strip()[1:-1]
    return body.replace('\\"', '"').replace("\\n", " ").replace("\\\\", "\\")
