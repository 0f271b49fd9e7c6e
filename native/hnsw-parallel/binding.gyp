{
  "targets": [
    {
      "target_name": "hnsw_parallel",
      "sources": ["src/addon.cc", "src/parallel_builder.cc", "src/hnsw_index.cc"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(node -p \"require('path').join(require('path').dirname(require.resolve('hnswlib-node/package.json')), 'src')\")"
      ],
      "defines": ["NAPI_DISABLE_CPP_EXCEPTIONS", "NAPI_VERSION=8"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-Wno-type-limits", "-Wno-unused-function"],
      "ldflags": ["-pthread"]
    }
  ]
}
