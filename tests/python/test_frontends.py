"""vdev.from_onnx / from_fx: ONNX's own node tests and a traced PyTorch module, run and compared."""
import os

import numpy as np
import pytest

import vdev

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
onnx = pytest.importorskip("onnx", reason="python3-onnx reads the expected outputs")
from onnx import numpy_helper  # noqa: E402


def _tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


@pytest.mark.skipif(not os.path.isdir(NODE_TESTS), reason="libonnx-testdata is not installed")
@pytest.mark.parametrize("name", ["test_gemm_all_attributes", "test_softmax_axis_1", "test_layer_normalization_4d_axis1",
                                  "test_reduce_mean_keepdims_random", "test_gather_negative_indices",
                                  "test_where_example"])
def test_from_onnx_matches_onnx_reference_outputs(name):
    d = os.path.join(NODE_TESTS, name)
    model = vdev.from_onnx(os.path.join(d, "model.onnx"))
    data = os.path.join(d, "test_data_set_0")
    inputs = [_tensor(os.path.join(data, f"input_{i}.pb")) for i in range(len(model.inputs))]
    outputs = model.run(*inputs)
    for i, actual in enumerate(outputs):
        expected = _tensor(os.path.join(data, f"output_{i}.pb"))
        np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-7)


def test_from_onnx_refuses_a_file_that_is_not_onnx(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(vdev.Error, match="bad.onnx: not an ONNX model"):
        vdev.from_onnx(bad)


def test_from_fx_matches_pytorch_and_places_a_value():
    torch = pytest.importorskip("torch", reason="python3-torch is optional")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    traced = torch.fx.symbolic_trace(mlp)
    x = torch.randn(3, 8)
    model = vdev.from_fx(traced, (x,))
    (actual,) = model.run(x.numpy())
    with torch.no_grad():
        expected = mlp(x).numpy()
    # f32 through different summation orders: a few ulps of values of order 1.
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(vdev.Error, match="GraphModule"):
        vdev.from_fx(mlp, (x,))
