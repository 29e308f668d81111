//go:build !cgo

package iceoryx

import (
	"fmt"
	"time"
)

// Without cgo nothing of iceoryx can be used.
var errNoCgo = fmt.Errorf("%w: rgaps was built without cgo", ErrNotSupported)

func Load() error                   { return errNoCgo }
func LoadedFrom() string            { return "" }
func InitRuntime(name string) error { return errNoCgo }
func ShutdownRuntime()              {}

type ServiceName struct{ Service, Instance, Event string }

type Publisher struct{}

func NewPublisher(name ServiceName, history int) (*Publisher, error) { return nil, errNoCgo }
func (p *Publisher) Loan(size int) ([]byte, error)                   { return nil, errNoCgo }
func (p *Publisher) Publish(chunk []byte) error                      { return errNoCgo }
func (p *Publisher) Release(chunk []byte) error                      { return errNoCgo }
func (p *Publisher) HasSubscribers() bool                            { return false }
func (p *Publisher) Close() error                                    { return ErrClosed }

type Subscriber struct{}

func NewSubscriber(name ServiceName, queue int) (*Subscriber, error)   { return nil, errNoCgo }
func (s *Subscriber) Subscribed() bool                                 { return false }
func (s *Subscriber) WaitSubscribed(timeout time.Duration) error       { return errNoCgo }
func (s *Subscriber) Wait(timeout time.Duration) (bool, error)         { return false, errNoCgo }
func (s *Subscriber) Take(size int) (chunk []byte, ok bool, err error) { return nil, false, errNoCgo }
func (s *Subscriber) Release(chunk []byte) error                       { return errNoCgo }
func (s *Subscriber) Close() error                                     { return ErrClosed }
