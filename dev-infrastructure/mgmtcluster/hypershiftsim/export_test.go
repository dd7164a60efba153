package hypershiftsim

// ProcessRunning is processRunning, for the package's external tests.
var ProcessRunning = processRunning
