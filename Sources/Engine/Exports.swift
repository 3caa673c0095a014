// `import Engine` alone builds and plays a room: the types its API takes
// and returns come from these modules.
@_exported import AudioCore
@_exported import Devices
@_exported import Scene
@_exported import Spatial
@_exported import Voice
